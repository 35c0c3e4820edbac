"""CudaAssertExtractor and OomExtractor on real message texts."""

from __future__ import annotations

import pytest

from minrepro.diagnose.extract.cuda import CudaAssertExtractor, OomExtractor
from minrepro.model import CudaAssert, Line, OomReport

GIB, MIB = 2**30, 2**20


def feed_all(extractor, rows: list[str], rank: int | None = None) -> list:
    events = []
    for number, text in enumerate(rows, start=1):
        events.extend(extractor.feed(Line(line=number, text=text, rank=rank)))
    return events + list(extractor.close())


ASSERTS = [
    # pytorch/examples-style index_select assert (brief; many issues)
    ("/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1141: indexSelectLargeIndex: block: "
     "[0,0,0], thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
     "/pytorch/aten/src/ATen/native/cuda/Indexing.cu", "indexSelectLargeIndex",
     "srcIndex < srcSelectDimSize"),
    ("../aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: block: "
     "[0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.",
     "../aten/src/ATen/native/cuda/Loss.cu", "nll_loss_forward_reduce_cuda_kernel_2d",
     "t >= 0 && t < n_classes"),
    # OpenBMB/MiniCPM-V#224: condition holds quotes
    ("../aten/src/ATen/native/cuda/ScatterGatherKernel.cu:144: operator(): block: [142,0,0], "
     "thread: [40,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` "
     "failed.",
     "../aten/src/ATen/native/cuda/ScatterGatherKernel.cu", "operator()",
     'idx_dim >= 0 && idx_dim < index_size && "index out of bounds"'),
    # lorenmt/mtan#62: Windows builds print no kernel name
    ("C:\\actions-runner\\_work\\pytorch\\pytorch\\builder\\windows\\pytorch\\aten\\src\\ATen\\"
     "native\\cuda\\NLLLoss2d.cu:103: block: [0,0,0], thread: [384,0,0] Assertion `t >= 0 && t < "
     "n_classes` failed.",
     "C:\\actions-runner\\_work\\pytorch\\pytorch\\builder\\windows\\pytorch\\aten\\src\\ATen\\"
     "native\\cuda\\NLLLoss2d.cu", "", "t >= 0 && t < n_classes"),
    # huaifeng1993/DFANet#32: THCUNN era, full C++ signature as the kernel
    ("/opt/conda/conda-bld/pytorch_1573049310284/work/aten/src/THCUNN/SpatialClassNLLCriterion.cu"
     ":104: void cunn_SpatialClassNLLCriterion_updateOutput_kernel(T *, T *, T *, long *, T *, int,"
     " int, int, int, int, long) [with T = float, AccumT = float]: block: [0,0,0], thread: "
     "[503,0,0] Assertion `t >= 0 && t < n_classes` failed.",
     "/opt/conda/conda-bld/pytorch_1573049310284/work/aten/src/THCUNN/SpatialClassNLLCriterion.cu",
     "void cunn_SpatialClassNLLCriterion_updateOutput_kernel(T *, T *, T *, long *, T *, int, int,"
     " int, int, int, long) [with T = float, AccumT = float]", "t >= 0 && t < n_classes"),
]


@pytest.mark.parametrize("text, file, kernel, condition", ASSERTS)
def test_cuda_assert(text: str, file: str, kernel: str, condition: str) -> None:
    (event,) = feed_all(CudaAssertExtractor(), [text], rank=2)
    assert event == CudaAssert(line=1, file=file, kernel=kernel, condition=condition, rank=2)


def test_cuda_assert_repeated_per_thread_is_reported_once() -> None:
    text = ASSERTS[1][0]
    rows = [text.replace("thread: [5,0,0]", f"thread: [{i},0,0]") for i in range(100)]
    assert len(feed_all(CudaAssertExtractor(), rows)) == 1


OOMS = [
    # corpus allocator_fragmentation__01.log (torch 2.0, old wording)
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.51 GiB (GPU 0; 15.78 "
     "GiB total capacity; 6.25 GiB already allocated; 283.44 MiB free; 13.91 GiB reserved in total"
     " by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb",
     OomReport(line=1, requested_bytes=round(2.51 * GIB), capacity_bytes=round(15.78 * GIB),
               free_bytes=round(283.44 * MIB), allocated_bytes=round(6.25 * GIB),
               reserved_bytes=round(13.91 * GIB), device_index=0, fmt="old")),
    # shllln/GenerativeGraph#5 (torch <= 1.3: "cached" instead of "reserved")
    ("RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total "
     "capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)",
     OomReport(line=1, requested_bytes=MIB, capacity_bytes=round(11.17 * GIB),
               free_bytes=576 * 1024, allocated_bytes=round(10.90 * GIB),
               reserved_bytes=round(30.96 * MIB), device_index=0, fmt="old")),
    # corpus allocator_fragmentation__04.log (2.1+ wording, private pools)
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 546.00 MiB. GPU 0 has a total "
     "capacity of 15.77 GiB of which 514.19 MiB is free. Process 562167 has 15.25 GiB memory in "
     "use. Of the allocated memory 13.73 GiB is allocated by PyTorch, with 46.00 MiB allocated in "
     "private pools (e.g., CUDA Graphs), and 736.86 MiB is reserved by PyTorch but unallocated.",
     OomReport(line=1, requested_bytes=546 * MIB, capacity_bytes=round(15.77 * GIB),
               free_bytes=round(514.19 * MIB), allocated_bytes=round(13.73 * GIB),
               reserved_bytes=round(13.73 * GIB) + round(736.86 * MIB), device_index=0,
               fmt="new")),
    # light-and-ray/sd-webui-replacer#74: torch 2.1 typo "capacty", 0 bytes free
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 27.12 GiB. GPU 0 has a "
     "total capacty of 11.99 GiB of which 0 bytes is free. Of the allocated memory 16.16 GiB is "
     "allocated by PyTorch, and 144.59 MiB is reserved by PyTorch but unallocated.",
     OomReport(line=1, requested_bytes=round(27.12 * GIB), capacity_bytes=round(11.99 * GIB),
               free_bytes=0, allocated_bytes=round(16.16 * GIB),
               reserved_bytes=round(16.16 * GIB) + round(144.59 * MIB), device_index=0,
               fmt="new")),
    # ROCm/TheRock#1054 (HIP wording)
    ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total "
     "capacity of 15.24 GiB of which 15.09 GiB is free. Of the allocated memory 0 bytes is "
     "allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.",
     OomReport(line=1, requested_bytes=16 * GIB, capacity_bytes=round(15.24 * GIB),
               free_bytes=round(15.09 * GIB), allocated_bytes=0, reserved_bytes=0,
               device_index=0, fmt="new")),
    # ShannonAI/Self_Explaining_Structures_Improve_NLP_Models#6: pasted without "out of memory"
    ("Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB already allocated; "
     "2.88 MiB free; 1.25 GiB reserved in total by PyTorch)",
     OomReport(line=1, requested_bytes=20 * MIB, capacity_bytes=round(1.96 * GIB),
               free_bytes=round(2.88 * MIB), allocated_bytes=round(1.24 * GIB),
               reserved_bytes=round(1.25 * GIB), device_index=0, fmt="old")),
    ("RuntimeError: CUDA error: out of memory",
     OomReport(line=1, requested_bytes=None)),
]


@pytest.mark.parametrize("text, expected", OOMS)
def test_oom_report(text: str, expected: OomReport) -> None:
    assert feed_all(OomExtractor(), [text]) == [expected]


@pytest.mark.parametrize("text", [
    # corpus undetached_loss_list__01/__04.log: prose, not a report
    "At around iteration ~215 when I use a batch size of 8, the GPU memory runs out of memory.",
    "For a large enough training set my GPU runs out of memory (the python process simply exit",
    "Tried to allocate a bigger batch and it failed",
])
def test_oom_prose_is_not_a_report(text: str) -> None:
    assert feed_all(OomExtractor(), [text]) == []


def test_a_host_side_cpp_assert_is_an_assertion_event() -> None:
    text = ("python: /project/lib/Analysis/Allocation.cpp:40: std::pair<int, int> "
            "mlir::triton::getCvtOrder(mlir::Attribute): Assertion `!(src && dst) && "
            "\"Unexpected mma -> mma layout conversion\"' failed.")
    (event,) = CudaAssertExtractor().feed(Line(line=7, text=text))
    assert event.file == "/project/lib/Analysis/Allocation.cpp"
    assert event.condition.startswith("!(src && dst)")
    # a Python assert's message quoting the words is no native assertion
    prose = "AssertionError: Assertion `x' failed"
    assert CudaAssertExtractor().feed(Line(line=1, text=prose)) == ()
