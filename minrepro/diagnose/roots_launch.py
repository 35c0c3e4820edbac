"""Root rules of the launch (MR-ROOT-0xx): the command line, the launch script, and how the
distributed job was set up (its rendezvous, backend and NCCL). Part of the config tier
(`roots_config.py` tries them in its order, between the settings and the checkpoint rules).
"""

from __future__ import annotations

from minrepro.diagnose.rootrule import RootRule
from minrepro.model import RootClass

C, E = RootClass.CONFIG, RootClass.ENVIRONMENT

LAUNCH_RULES: tuple[RootRule, ...] = (
    RootRule("MR-ROOT-032", C, "The launch command's arguments are wrong",
             "Check the command line against the script's --help.",
             types=("SystemExit", "ArgumentError", ""),
             message=r"unrecognized arguments|the following arguments are required|"
                     r"invalid choice|expected one argument|argument \S+: invalid|"
                     r"\.py: error: |can't open file '"),
    RootRule("MR-ROOT-154", C, "The launch script reads a variable the environment does not "
             "set (set -u)", "Export it before the script runs (export PYTHONPATH=${PYTHONPATH"
             ":-}), write ${VAR:-} in the script, or `set +u` around `conda activate`.",
             message=r": line \d+: [A-Za-z_]\w*: unbound variable"),
    RootRule("MR-ROOT-033", C, "A distributed rendezvous address or port is not usable",
             "Use a free MASTER_PORT and a reachable MASTER_ADDR.",
             message=r"Address already in use|EADDRINUSE|failed to listen on any local "
                     r"network address|Connection refused.*(?:29500|MASTER|rendezvous)"),
    RootRule("MR-ROOT-047", C, "The code uses torch.distributed, but the job was not "
             "started as a distributed one", "Launch with torchrun (or the framework's "
             "distributed launcher option), or turn the distributed parts (SyncBatchNorm, "
             "dist.* calls) off for a single-process run.",
             message=r"Default process group has not been initialized|"
                     r"environment variable (?:RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT|"
                     r"LOCAL_RANK) expected, but not set|"
                     # the code's own check, failing (`assert dist.is_initialized()`)
                     r"assert\s+(?:torch\.)?dist(?:ributed)?\.is_initialized\(\)"),
    RootRule("MR-ROOT-048", C, "The job asks for a distributed backend this torch build "
             "does not have", "Use the gloo backend where NCCL is missing (Windows, macOS, a "
             "CPU build): init_process_group('gloo'), or the framework's backend setting.",
             message=r"Distributed package doesn't have \w+ built in|"
                     r"(?:NCCL|MPI|UCC) backend is not available"),
    RootRule("MR-ROOT-062", E, "NCCL failed in a CUDA or system call on this machine "
             "(driver, NCCL build, shared memory, network interfaces)",
             "Run with NCCL_DEBUG=INFO to see the failing call; check the driver and NCCL "
             "versions match the torch build, give the container more shared memory "
             "(--shm-size / --ipc=host), and set NCCL_SOCKET_IFNAME to the right interface.",
             message=r"unhandled (?:cuda|system) error|ncclUnhandledCudaError|ncclSystemError"),
)
