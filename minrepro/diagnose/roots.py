"""Where a failure outside the cause taxonomy came from: its root class, from the evidence.

A table of root rules (data, with stable ids MR-ROOT-NNN in the rule id space), tried in
order, the first that matches the first failure deciding. Each looks at the failure's
exception type, its message, and where it was raised (the user's own code, a library, a
DataLoader worker). Where none matches, the answer is null: the evidence does not decide,
and minrepro says so rather than guess.
"""

from __future__ import annotations

from minrepro.diagnose.rootrule import (
    CALLER,
    IMPORT,
    LIBRARY,
    OWN_PACKAGE,
    USER_CALL,
    VERSION,
    RootRule,
)
from minrepro.diagnose.roots_config import CONFIG_RULES
from minrepro.diagnose.roots_data import DATA_RULES
from minrepro.diagnose.roots_place import PLACE_RULES
from minrepro.model import Failure, FailureKind, RootClass

C, D, K, E, F, H = (RootClass.CONFIG, RootClass.DATA, RootClass.CODE, RootClass.ENVIRONMENT,
                    RootClass.FRAMEWORK, RootClass.HARDWARE)

_KEYWORD_FIX = ("Pin the versions the code was written for (pip install 'pkg==X'), or rename "
                "the keyword as the library's changelog says.")
#: the usual names of a repo's own packages (no installed package of ML's is named so)
_PROJECT_PACKAGE = (r"(?:src|models?|utils?|lib|config|configs|modules|tools|core|common|scripts|"
                    r"data|dataset|dataloaders?|networks?|nets|losses?|layers|engine|helpers?|"
                    r"misc|options|opts|trainers?)")
#: the usual names of a repo's own script modules (`module 'val' has no attribute 'run'`)
_PROJECT_MODULE = (r"module '(?:src|models?|utils?|lib|configs?|modules|tools|core|common|"
                   r"scripts|val|test|train|eval|evaluate|datasets?|data|options|opts|main|"
                   r"losses?|trainer|engine)")

EVIDENCE_RULES: tuple[RootRule, ...] = (
    # hardware and framework first: they show in any exception type
    RootRule("MR-ROOT-001", H, "The GPU or its link failed (Xid, ECC, fallen off the bus)",
             "Drain the node, check `nvidia-smi -q` / dmesg for Xid and ECC errors, rerun "
             "elsewhere.",
             message=r"(?i)\bXid\b|uncorrectable ECC|fallen off the bus|GPU is lost|"
                     r"ECC error|NVLink error|NET/IB : Got async event : port error|"
                     r"ibv_\w+ failed|Input/output error.*nvidia"),
    # PyTorch's own asserts on the driver's libraries (c10/cuda/driver_api.cpp: libcuda not
    # found by dlopen; DriverAPI::get()->nvmlInit: NVML not loaded or not matching the
    # driver, fixed by a reboot after a driver update): the machine, not a PyTorch bug
    RootRule("MR-ROOT-111", E, "The NVIDIA driver's libraries (libcuda, NVML) could not be "
             "loaded or initialised",
             "Check `nvidia-smi` works in this environment (a container, WSL: libcuda on the "
             "library path); after a driver update, reboot; a torch release that finds the "
             "driver's libraries where they are installed may be needed.",
             message=r"driver_api\.cpp|DriverAPI::get\(\)"),
    # cudaErrorLaunchFailure after the same kernels ran for a long while: the card or its
    # driver (Xid 13/31/43 in dmesg), not a bug that would have failed at the first step
    RootRule("MR-ROOT-115", H, "A CUDA kernel failed to run after the run had trained for a "
             "while (unspecified launch failure)", "Check dmesg / `nvidia-smi -q` on that node "
             "for Xid errors and rerun on another GPU; if it fails there at the same step, "
             "run with CUDA_LAUNCH_BLOCKING=1 to find the kernel.",
             message=r"unspecified launch failure", after_training=True),
    RootRule("MR-ROOT-002", F, "An internal assertion of PyTorch or a library failed",
             "Report it upstream with the repro; try another release of the library.",
             message=r"INTERNAL ASSERT FAILED|please report a bug to PyTorch|"
                     r"this is a bug in|Please file an issue"),
    # the ranks' collectives checked against each other (TORCH_DISTRIBUTED_DEBUG=DETAIL,
    # accelerate's debug mode) and found to differ: their code took different paths
    RootRule("MR-ROOT-112", K, "The ranks called different collectives, or the same one "
             "with tensors of different shapes", "Make every rank run the same collectives in "
             "the same order with the same shapes: no collective under a rank-dependent `if`, "
             "even batches on every rank (drop_last, or pad and gather).",
             message=r"Detected mismatch between collectives on ranks|"
                     r"DistributedOperationException: Cannot apply desired operation due to "
                     r"shape mismatches"),
    # the project's own package not importable is the command's (cwd, PYTHONPATH), not an install
    RootRule("MR-ROOT-017", C, "The project's own package is not on the import path",
             "Run from the repository root, set PYTHONPATH to it, or pip install -e . there.",
             types=("ModuleNotFoundError",),
             message=r"No module named '" + _PROJECT_PACKAGE + r"(?:'|\.)",
             refutes="missing_dependency"),
    # ...whatever its name: a folder the user's own script runs from
    RootRule("MR-ROOT-149", C, "The project's own package is not on the import path (the "
             "script runs from inside it)", "Run it as a module from the repository root "
             "(python -m pkg.train), or set PYTHONPATH to the root (PYTHONPATH=. python "
             "pkg/train.py), or pip install -e . there.", types=("ModuleNotFoundError",),
             raised_in=OWN_PACKAGE, refutes="missing_dependency"),
    # the environment: what is installed
    RootRule("MR-ROOT-010", E, "A module the code imports is not installed",
             "Install the package that provides it (pip install ...), in the environment "
             "that runs the job.", types=("ModuleNotFoundError",)),
    RootRule("MR-ROOT-019", K, "The repo's own module lacks a name it imports (an old "
             "checkout, or a local file shadowing a package)",
             "Update the checkout (git pull) or rename the local module that shadows the "
             "package of the same name.", types=("ImportError",),
             message=r"cannot import name '\w+' from '[\w.]+' \((?![^)]*(?:site-packages|"
                     r"dist-packages|[\\/]lib[\\/]python|conda|\.venv))[^)]+\)"),
    # torch.compile's Inductor needs Triton for GPU kernels (not on Windows, too old a build)
    RootRule("MR-ROOT-102", E, "torch.compile needs Triton, which is missing or too old here",
             "Install the Triton build that fits the torch release (pip install triton; "
             "triton-windows on Windows), or compile without it (torch.compile(..., "
             "backend='aot_eager')) or not at all.", types=("TritonMissing",)),
    # a module of the repo's own that imports itself, or one that imports it back, before its
    # names are defined: the repo's import structure (or a script named like what it imports)
    RootRule("MR-ROOT-142", K, "The repo's own modules import each other in a circle",
             "Break the cycle: move the shared names into a module both import, import inside "
             "the function that needs it, or rename a script that has the name of a module it "
             "imports.", types=("ImportError",),
             message=r"from partially initialized module '[\w.]+' \(most likely due to a "
                     r"circular import\) \((?![^)]*(?:site-packages|dist-packages|[\\/]lib"
                     r"[\\/]python|conda|\.venv))[^)]+\)"),
    RootRule("MR-ROOT-011", E, "An installed package lacks a name the code imports",
             "Install the version the code was written for (see the repo's requirements).",
             types=("ImportError",),
             message=r"cannot import name|No module named|requires the \S+ library|"
                     r"undefined symbol|version `GLIBC|\.so[.\d]*: cannot open shared",
             corroborates=VERSION),
    RootRule("MR-ROOT-075", E, "A registry lacks the model or module the config names: the "
             "installed package is not the release (or the repo's fork) that registers it",
             "Install the release, or the repo's own modified copy (pip install -e . in it), "
             "that defines the name; or import the module that registers it (custom_imports).",
             types=("KeyError",), message=r"is not in the [\w:]+ registry|No object named "
                                          r"'[\w.]+' found in '\w+' registry"),
    # an installed package that fails in its own module body: a broken or placeholder install
    # (`mmengine/__init__.py raise NotImplementedError`), a build that does not fit torch
    RootRule("MR-ROOT-045", E, "An installed package fails while it is being imported",
             "Reinstall the package at the version the code needs (pip install -U / the repo's "
             "requirements), built for this torch and Python.", raised_in=IMPORT),
    # a subclass calling its base's __init__: the base is a framework's (a Trainer, a Dataset)
    # whose signature the installed release changed
    RootRule("MR-ROOT-077", E, "A class calls its base class's __init__ with arguments the "
             "installed release's base no longer takes", "Install the framework release the "
             "code was written for (the repo's requirements), or update the super().__init__ "
             "call to the installed signature.", types=("TypeError",), scope="raise",
             message=r"(?s)(?:takes \d+ positional arguments? but \d+ (?:were|was) given|missing "
                     r"\d+ required).*\bsuper\([^)]*\)\.__init__\(",
             corroborates=VERSION),
    # Lightning 2.0 ships as two packages: a model built on `pytorch_lightning` handed to the
    # Trainer of `lightning.pytorch` (or the reverse; pytorch-forecasting 1.x builds on the new
    # one) is "not a LightningModule"
    RootRule("MR-ROOT-119", E, "A model of one Lightning package is handed to the Trainer of "
             "the other", "Import the Trainer and the LightningModule from one package: "
             "`lightning.pytorch` (and libraries built on it) or `pytorch_lightning`, not one "
             "of each; pin the versions the code was written for.", types=("TypeError",),
             message=r"`model` must be a `LightningModule`(?: or `torch\._dynamo\."
                     r"OptimizedModule`)?, got `"),
    # Hydra's instantiate calling a config's target with the config's keys: a key the target
    # does not take, or one it needs and the config lacks, is the config's
    RootRule("MR-ROOT-140", C, "The config passes its target a key it does not take (or "
             "lacks one it needs)", "Fix the config node of the target the message names: "
             "rename or drop the key the target refuses, or add the one it requires (check "
             "the target's signature in the installed version).", types=("TypeError",),
             message=r"(?:got an unexpected keyword argument|missing \d+ required (?:positional"
                     r"|keyword-only) arguments?)[^\n]*\nError in call to target '"),
    # a Trainer subclass's hook written for an older release, called with the newer signature
    # (before the caller's own call: the hook's name says whose signature moved)
    # (transformers 4.46 passes num_items_in_batch to training_step and compute_loss)
    RootRule("MR-ROOT-104", E, "A Trainer hook the code overrides has the signature of an "
             "older release", "Give the override the installed release's signature (accept "
             "num_items_in_batch=None, or **kwargs), or install the transformers version the "
             "code was written for.", types=("TypeError",),
             # (its private methods are hooks too: `_save_checkpoint(..., metrics=)` in 4.42)
             message=r"\w*Trainer\.(?:training_step|compute_loss|prediction_step|"
                     r"evaluation_loop|log|_\w+)\(\) (?:takes \d+ positional arguments? but "
                     r"\d+ (?:were|was) giv|got an unexpected keyword argument)",
             corroborates=VERSION),
    # raised at the call, in the caller's frame (or no frame printed): the caller's own call
    # does not fit (a library's internal call that does not fit is MR-ROOT-012's)
    RootRule("MR-ROOT-051", K, "A call does not fit the signature of what it calls",
             "Read the call the message names: the number or order of its arguments, or a "
             "keyword also given by position, does not fit the function's signature.",
             types=("TypeError",), raised_in=CALLER,
             message=r"takes \d+ positional arguments? but \d+ (?:were|was) given|"
                     r"got multiple values for argument|"
                     r"missing \d+ required (?:positional|keyword-only) arguments?"),
    RootRule("MR-ROOT-012", E, "A library call fails on a keyword or attribute its "
             "installed version does not have",
             "Pin the versions the code needs (pip install 'pkg==X'); compare pip freeze "
             "with the repo's requirements.", types=("TypeError", "AttributeError"),
             message=r"module '(?!torch\._C' has no attribute '_cuda_)[\w.]+' has no "
                     r"attribute|got multiple values for argument|takes \d+ positional "
                     r"arguments? but \d+ (?:were|was) given", raised_in=LIBRARY,
             corroborates=VERSION),
    # the user's code calls its model (through torch's Module.__call__): not a library's Trainer
    RootRule("MR-ROOT-136", K, "The training code calls a model with a keyword its forward() "
             "does not take", "Make the call and the model's forward() agree: pass only the "
             "inputs the model's forward() lists (drop or rename the keyword), or add it to the "
             "forward() signature.", types=("TypeError",), raised_in=USER_CALL,
             message=r"\w*\(\) got an unexpected keyword argument"),
    # an mmcv/mmengine config's `_delete_=True` reached the class it configures: it replaces a
    # base config's dict only where the config inherits one (`_base_`), else it is passed on
    RootRule("MR-ROOT-134", C, "A config's `_delete_` directive was passed on to the class it "
             "configures", "Use `_delete_=True` only in a config that inherits the dict from a "
             "`_base_` config; elsewhere drop it (the dict is the whole setting already).",
             types=("TypeError",), message=r"unexpected keyword argument '_delete_'"),
    # Python raises a bad keyword in the caller's frame: the user's code, calling a library
    # (`TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategy'`)
    # ... called through its module (`smp.decoders.unet.decoder.UnetDecoder(`, `torch.load(`):
    # the callee is the library's, not a class of the repo's own that the call does not fit
    # ... a helper of the repo's own modules (`misc.save_model(..., is_best=...)`,
    # `utils.train_one_epoch(`): the repo's call and its own function disagree
    RootRule("MR-ROOT-138", K, "A call passes a keyword that the repo's own helper does not "
             "take", "Make the call and the repo's function agree (its signature in the "
             "repo's misc/utils module): rename or drop the keyword, or add it to the "
             "function.", types=("TypeError",), scope="raise",
             message=r"\b(\w+)\(\) got an unexpected keyword argument[^\n]*\n.*?(?<![\w.])"
                     r"(?:misc|utils?|helpers?|common|tools)\.(?:\w+\.)*\1\s*\("),
    RootRule("MR-ROOT-118", E, "A call into a library's module passes a keyword its installed "
             "version does not take", _KEYWORD_FIX, types=("TypeError",), scope="raise",
             message=r"\b(\w+)(?:\.__init__)?\(\) got an unexpected keyword argument[^\n]*\n"
                     r".*?\b(?!self\.)[A-Za-z_]\w*(?:\.\w+)*\.\1\s*\(",
             corroborates=VERSION),
    RootRule("MR-ROOT-018", E, "A library call passes a keyword its installed version does "
             "not take", _KEYWORD_FIX, types=("TypeError",),
             message=r"(?:__init__|forward|\w+)\(\) got an unexpected keyword argument"),
    # torch.onnx.export asked for an opset newer than the installed exporter knows
    RootRule("MR-ROOT-126", E, "The installed torch's ONNX exporter does not know the opset "
             "asked for", "Install the torch release the export script was written for (each "
             "release's exporter has a highest opset), or export with an opset the installed "
             "one supports.", types=("ValueError",), message=r"Unsupported ONNX opset version",
             corroborates=VERSION),
    # safetensors refuses to write tensors that share memory (an lm_head tied to the input
    # embeddings): the save call, not the model, must handle the tie
    RootRule("MR-ROOT-127", K, "The model's tied weights share memory, which safetensors will "
             "not write as two tensors", "Save with the framework's call that knows the tie "
             "(model.save_pretrained, accelerator.save_model), or clone the tied weight into "
             "its own Parameter before saving; safe_serialization=False writes a pickle "
             "instead.", message=r"Some tensors share memory, this will lead to duplicate "
                                 r"memory on disk"),
    RootRule("MR-ROOT-015", E, "The installed library no longer supports what the code uses",
             "Install the version the code was written for, or port the code to the new API.",
             message=r"(?i)no longer supported|has been removed|was removed in|"
                     r"invalid index of a 0-dim tensor|"
                     r"is deprecated and (?:will be )?removed|requires [`'\"]?[\w-]+ ?[<>=]=? ?\d|"
                     # a model type newer than the installed transformers
                     r"Transformers does not recognize this architecture|"
                     # a repo's own version check: `MMCV==1.3.1 is used but incompatible`
                     r"is used but incompatible|please install [\w.-]+ ?[<>=]=",
             corroborates=VERSION),
    # the repo's own script module (`val`, `models`, `utils`) lacking it: an installed
    # package of that name shadowing the repo's val.py, or the repo's module changed
    RootRule("MR-ROOT-135", K, "A module of the repo's own lacks an attribute the code uses "
             "(or an installed package of its name shadows it)", "Print the module's __file__ "
             "where it is imported: if it is an installed package, rename the repo's module or "
             "import it by its path; else the repo's code and its callers disagree.",
             types=("AttributeError",), message=_PROJECT_MODULE + r"(?:\.[\w.]+)?' has no "
             r"attribute"),
    # an optimizer class of the repo's (an EMA or Lookahead wrapper, an old RAdam) that never
    # ran torch.optim.Optimizer.__init__ meets the state newer torch's methods read
    # (`_optimizer_step_pre_hooks` since 2.0, `defaults` in zero_grad): torch's own classes
    # have it; the wrapper was written for an older torch
    RootRule("MR-ROOT-143", E, "An optimizer wrapper of the repo's lacks the state the "
             "installed torch's Optimizer methods read", "Install the torch release the repo "
             "was written for, or update the wrapper: call Optimizer.__init__ (or copy "
             "defaults, state and the _optimizer_*_hooks from the optimizer it wraps).",
             types=("AttributeError",), packages=("torch",),
             message=r"'(?!(?:Adam|AdamW|SGD|RMSprop|Adagrad|Adadelta|Adamax|NAdam|RAdam|LBFGS|"
                     r"ASGD|Rprop|SparseAdam|Optimizer)')\w+' object has no attribute "
                     r"'(?:_optimizer_\w+_hooks|defaults|_zero_grad_profile_name)'",
             corroborates=VERSION),
    RootRule("MR-ROOT-016", E, "An installed module lacks an attribute the code uses",
             "The module's version (or build: torch without distributed, without CUDA) is not "
             "the one the code expects; install the one it needs.",
             types=("AttributeError",), message=r"module '[\w.]+' has no attribute",
             corroborates=VERSION),
    RootRule("MR-ROOT-050", E, "A Triton kernel does not compile with the installed Triton",
             "Install the Triton release the kernel was written for (the one the repo or "
             "flash-attn pins), or use the kernel's non-Triton path.",
             types=("CompilationError",), message=r"triton"),
    # a C++/CUDA extension that was never built or cannot be built here (DeepSpeed's ops
    # are compiled on first use: without a compiler or CUDA toolkit the op is missing)
    RootRule("MR-ROOT-086", E, "A compiled extension the code needs was not built (no "
             "compiler, ninja or CUDA toolkit where it is compiled on first use)", "Install the "
             "build tools the extension needs (ninja, a C++ compiler, the CUDA toolkit of the "
             "torch build) or a prebuilt release (DS_BUILD_OPS=1 pip install deepspeed).",
             message=r"'DeepSpeed\w+' object has no attribute '(?:ds_\w+|\w+_op)'|"
                     r"Ninja is required to load C\+\+ extensions|"
                     r"Error building extension '\w+'|"
                     # a compiler the run calls (torch.compile's C++ wrapper, a JIT extension)
                     r"CppCompileError|No working C\+\+ compiler found|Failed to find C "
                     r"compiler|Command '\[['\"](?:[^'\"]*[/\\])?(?:g\+\+|gcc|c\+\+|"
                     r"clang(?:\+\+)?|nvcc|ninja|cl(?:\.exe)?)['\"]"),
    RootRule("MR-ROOT-013", E, "The machine ran out of disk space (or its storage failed a "
             "write)", "Free disk space or write checkpoints elsewhere; check the file system "
             "the job writes to.",
             message=r"No space left on device|Disk quota exceeded|file write failed|"
                     r"write\(\): fd \d+ failed|failed with Input/output error|"
                     r"\[Errno 5\] Input/output error|"
                     # torch.save's zip writer when the disk fills under it
                     r"basic_ios::clear: iostream error|unexpected pos \d+ vs \d+"),
    RootRule("MR-ROOT-014", E, "The CUDA driver, runtime or build does not fit",
             "Install a torch build for this driver and GPU (see pytorch.org/get-started).",
             message=r"(?i)CUDA driver version is insufficient|no kernel image|"
                     r"driver on your system is too old|Found no NVIDIA driver|"
                     r"Torch not compiled with CUDA enabled|libcudart|"
                     r"too old to be supported|CUDA capability sm_\d+ is not compatible|"
                     r"only supports devices of CUDA Capability",
             corroborates="cuda_env_mismatch"),
    # a GPU index the machine does not have: the job's device setting, not its CUDA install
    RootRule("MR-ROOT-090", C, "The job asks for a GPU this machine does not have (a device "
             "index past the visible GPUs)", "Ask for a GPU index below torch.cuda.device_count() "
             "(--gpu / --local_rank / CUDA_VISIBLE_DEVICES), or launch one process a visible GPU.",
             message=r"invalid device ordinal"),
    RootRule("MR-ROOT-106", C, "The device index is -1: the rank the code reads was never set "
             "(a local_rank left at its default of -1)", "Launch with torchrun (which sets "
             "LOCAL_RANK) and read the rank from os.environ['LOCAL_RANK'], or accept both "
             "--local-rank and --local_rank; torchrun no longer passes the flag.",
             message=r"Device index must not be negative"),
    RootRule("MR-ROOT-008", E, "A CUDA runtime or library (cuDNN, cuBLAS) call failed",
             "Check that the torch build fits the driver and GPU (python -m "
             "torch.utils.collect_env); try CUDNN off (torch.backends.cudnn.enabled = False) "
             "to confirm, then reinstall a matching build.",
             # error 59 is cudaErrorAssert: a kernel's assert on an index (MR-ROOT-023)
             message=r"cuda runtime error \((?!59\))\d+\)|CUDNN_STATUS_\w+|cuDNN error|"
                     r"CUBLAS_STATUS_(?:NOT_INITIALIZED|EXECUTION_FAILED|INTERNAL_ERROR|"
                     r"NOT_SUPPORTED)|CUDA-capable devices? (?:are|is/are) busy|"
                     r"invalid device function|no CUDA GPUs are available|"
                     r"But your machine only has: \[\]|"
                     r"CUDA driver initialization failed|CUDA error: (?:initialization error|"
                     r"CUDA-capable device|operation not supported)"),
    # printing to a console whose code page cannot hold the text (Windows' gbk / cp1252, a
    # POSIX locale of C/ascii): the machine's locale, not the program
    RootRule("MR-ROOT-108", E, "The console's encoding cannot show a character the program "
             "prints (a legacy code page or an ASCII locale)", "Run with UTF-8 output: set "
             "PYTHONUTF8=1 (or PYTHONIOENCODING=utf-8), `chcp 65001` on Windows, a UTF-8 "
             "locale (LANG=C.UTF-8) elsewhere.", types=("UnicodeEncodeError",),
             message=r"'(?:gbk|gb2312|gb18030|cp\d+|charmap|ascii|latin-1|shift_jis|"
                     r"euc[-_]\w+)' codec can't\s+encode"),  # (a narrow console wraps it)
    # SIGBUS (exit -7): a memory-mapped page that cannot be backed, most often a container's
    # small /dev/shm filled by DataLoader workers or DeepSpeed/NCCL buffers
    RootRule("MR-ROOT-089", E, "The process died of SIGBUS: the shared memory (/dev/shm) is "
             "too small for it", "Give the container more shared memory (docker --shm-size=16g "
             "or --ipc=host, a Kubernetes emptyDir of medium Memory on /dev/shm), or use fewer "
             "DataLoader workers.",
             message=r"exitcode\s*: -7\b|Signal 7 \(SIGBUS\)|died with <Signals\.SIGBUS: 7>|"
                     r"killed by signal: Bus error"),
    RootRule("MR-ROOT-009", E, "A native library crashed the process (a segfault, an illegal "
             "instruction): builds that do not fit each other or the machine",
             "Reinstall torch and the packages with compiled code (torchvision, apex, "
             "flash-attn, bitsandbytes) as builds for the same torch/CUDA; rerun under "
             "`python -X faulthandler` to see the frame.",
             message=r"(?i)segmentation fault|SIGSEGV|Illegal instruction|SIGILL|"
                     r"Fatal Python error|Bus error|"
                     # a launched child's own status: Windows' access violation 0xC0000005
                     # (3221225477, signed -1073741819), a POSIX child killed by SIGSEGV
                     r"non-zero exit status (?:3221225477|-1073741819|-11|139)\b|"
                     # torchrun's and DeepSpeed's launcher's report of a rank killed by SIGSEGV
                     r"exitcode\s*: -11\b|return code = -11\b"),
) + DATA_RULES + (  # the samples (roots_data.py), then batches, checkpoints, asserts
    # BatchNorm in training mode on a batch of one sample (the last batch of an epoch)
    RootRule("MR-ROOT-087", C, "A batch of one sample reached BatchNorm in training (the "
             "epoch's last, or a batch size of 1)", "Drop the incomplete last batch "
             "(DataLoader(drop_last=True)) or pick a batch size that does not leave one sample "
             "over; with a batch size of 1, use GroupNorm/LayerNorm or eval-mode BatchNorm.",
             message=r"Expected more than 1 value per channel when training"),
    # a checkpoint pickled with objects of the script that saved it (a function, a class of
    # its __main__): loadable only where that script's names exist
    RootRule("MR-ROOT-088", C, "The checkpoint pickles objects of the script that saved it, "
             "which the loading script does not define", "Load it from the script that saved "
             "it, or save (and load) a state_dict only: torch.save(model.state_dict(), ...).",
             types=("AttributeError",),
             message=r"Can't get attribute '\w+' on <module '__(?:mp_)?main__'"),
    # more samples asked for in one batch than the data set (or a split of it) holds
    RootRule("MR-ROOT-081", C, "The batch size is larger than the data set (or a split of it)",
             "Use a batch size no larger than the smallest split (the validation set, the "
             "last batch), or give that split more samples; drop_last with fewer samples than "
             "a batch leaves none.",
             message=r"(?i)batch[ _-]?size[^\n]{0,60}\b(?:exceeds?|(?:is )?(?:larger|greater|"
                     r"bigger) than)[^\n]{0,30}\b(?:the )?(?:dataset|data set|number of "
                     r"(?:samples|examples|items|images)|(?:dataset|data set) (?:length|size))|"
                     r"\b(?:dataset|data set|split|filelist)[^\n]{0,60}\b(?:smaller|fewer|less) "
                     r"than (?:the |one )?batch[ _-]?size"),
    # glibc's assert format (`file.cpp:40: func: Assertion `cond' failed.`): a compiled
    # library's own invariant, on the host (CUDA kernels print theirs `cond` failed)
    RootRule("MR-ROOT-091", F, "An assertion inside a compiled library's C/C++ code failed",
             "Report it to the library (Triton, the extension named in the path) with the "
             "repro; try another release of it, or the code path without it.",
             message=r"\.(?:c|cc|cpp|cxx|h|hpp):\d+: [^\n]*Assertion `[^\n]*' failed"),
    RootRule("MR-ROOT-003", F, "An assertion inside PyTorch's own C++ code failed",
             "Report it upstream with the repro; try another torch release.",
             message=r"(?:csrc|aten|c10)[\\/]\S+\.(?:cpp|cc|h):\d+: \w+: Assertion `"),
) + CONFIG_RULES
# then the rules of where it was raised: the user's code, or a library refusing its input
ROOT_RULES: tuple[RootRule, ...] = EVIDENCE_RULES + PLACE_RULES


def root_of(failure: Failure, *, trained: bool = False, no_batches: bool = False
            ) -> RootRule | None:
    """The first root rule that matches the failure (its root None where that evidence does
    not decide), or None where no rule matches. `trained`: the log shows the run trained for
    a while before it failed; `no_batches`: a progress bar over no item came right before it."""
    if not failure.exc_type and failure.kind is FailureKind.EXCEPTION:
        return None  # a traceback cut before its exception line
    text = failure.headline + "\n" + failure.text[-2000:]
    in_worker = "DataLoader worker" in failure.text or "_worker_loop" in failure.text
    return next((rule for rule in ROOT_RULES
                 if rule.matches(failure, text, in_worker, trained, no_batches)), None)
