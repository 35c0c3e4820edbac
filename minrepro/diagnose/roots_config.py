"""Root rules of the config tier (MR-ROOT-0xx): the job's settings, paths and command.

Tried after the hardware, framework, environment and data evidence of `roots.py` and before
the rules of where a failure was raised (`roots_place.py`); the order within is the order
they are tried. `roots.py` joins the tables and decides.
"""

from __future__ import annotations

from minrepro.diagnose.extract.kills import BATCH_REPORT
from minrepro.diagnose.rootrule import LIBRARY, RootRule
from minrepro.diagnose.roots_launch import LAUNCH_RULES
from minrepro.model import RootClass

C, E, K = RootClass.CONFIG, RootClass.ENVIRONMENT, RootClass.CODE

CONFIG_RULES: tuple[RootRule, ...] = (
    # config: settings, paths, the command
    # the scheduler ending a job at its time limit: how long the job was given, not a failure
    # of the run (a run hung before it shows that itself: no progress long before the end)
    RootRule("MR-ROOT-139", None, "The scheduler stopped the job at its time limit: no failure "
             "of the run itself", "Ask for more time (sbatch --time, the queue's walltime), or "
             "save checkpoints often and resume in a new job; the log shows whether training "
             "was still making progress when it was stopped.",
             # the stop itself (a kill, or torchrun's SignalException on the SIGTERM), not
             # an exception the job raised before the scheduler's line was printed
             types=("", "SignalException"),
             message=r"DUE TO TIME LIMIT|TERM_RUNLIMIT|PBS: job killed: walltime"),
    RootRule("MR-ROOT-029", C, "The process was killed (host memory, the OOM killer, the "
             "scheduler)", "Give the job more host memory or load less at once (stream the "
             "data set, fewer workers, map with fewer processes); check the scheduler's limits.",
             message=r"exitcode: -9|SIGKILL|Signal 9|oom[-_]kill|OOM Killed|Out of memory: "
                     r"Killed process|process killed: (?:\d+ )?Killed|"
                     r"exitcode\s*: -9|return code = -9|" + BATCH_REPORT),
    # the work dir on a mount that cannot do what the run does there (mmcv's latest.pth
    # symlink on Google Drive, FUSE or SMB mounts): where the config points the output
    RootRule("MR-ROOT-109", C, "The output folder is on a file system that cannot do what the "
             "run does there (a symlink on a mounted drive)", "Point the work / output dir at a "
             "local disk and copy the checkpoints to the mounted drive afterwards, or turn "
             "the symlink off (mmcv: checkpoint_config = dict(create_symlink=False)).",
             types=("OSError", "PermissionError"),
             message=r"\[Errno (?:95|1)\] Operation not (?:supported|permitted): \S+ -> "),
    # torchrun's agent handles SIGHUP itself (nohup does not shield it): the shell or ssh
    # session that launched the job went away, and the agent shut its workers down
    RootRule("MR-ROOT-110", C, "The launcher got SIGHUP: the terminal or ssh session that "
             "started the job closed", "Start the job detached from the terminal (tmux or "
             "screen, `setsid nohup torchrun ... &`, or through the scheduler): torchrun "
             "handles SIGHUP itself, so nohup alone does not protect it.",
             types=("SignalException",), message=r"got signal: 1\b|\bSIGHUP\b"),
    RootRule("MR-ROOT-030", C, "A path in the config or command does not exist",
             "Check the data / checkpoint / output paths the job was given.",
             types=("FileNotFoundError", "NotADirectoryError", "IsADirectoryError")),
    # the code's own check that a path it was given exists (`assert os.path.exists(p)`)
    RootRule("MR-ROOT-155", C, "A file or folder the job was given does not exist (the "
             "code's own check of the path failed)", "Check the path the assert tests (print "
             "it): the data / checkpoint / output path the job was given, or the file an "
             "earlier step (preprocessing) should have written there.",
             types=("AssertionError",), scope="raise",
             message=r"\bassert\s+(?:os\.path\.(?:exists|isfile|isdir)\(|"
                     r"[\w.]*(?:Path\([^\n]*\)|path\w*|dir\w*|file\w*)\.(?:exists|is_file|"
                     r"is_dir)\(\))"),
    # the first of a list of files a folder or glob gave (`self.data_paths[0]`,
    # `glob(...)[0]`): the list is empty, the path or pattern the job was given matched nothing
    RootRule("MR-ROOT-133", C, "A list of files the job's path or pattern should have found "
             "is empty", "Check the data / checkpoint path and file pattern the job was given "
             "(print the folder's listing): the glob or folder matched no file.",
             types=("IndexError",), scope="raise",
             message=r"list index out of range\n(?:.*\b\w*(?:path|file|dir|folder|img|image|"
                     r"ckpt|checkpoint|shard)s?\w*\s*\[\s*-?[01]\s*\]|.*\b(?:i?glob|listdir|"
                     r"scandir)\([^\n]*\)\s*\)?\s*\[)"),
    # a service the job logs into (W&B, the HF hub, a gated model) without its key or token:
    # the job's settings, not the network (before MR-ROOT-080: a 401 is an answer)
    RootRule("MR-ROOT-095", C, "The job uses a service it has no credentials for (an API key "
             "or token not set, or not allowed for a gated model)", "Log in where the job runs "
             "(wandb login / huggingface-cli login, or WANDB_API_KEY / HF_TOKEN in the job's "
             "environment), request access to a gated model, or turn the logger off.",
             message=r"api_key not configured|(?:wandb|WANDB).{0,40}\blogin\b|"
                     r"401 Client Error|\b401\b.{0,20}Unauthorized|Invalid (?:user )?token|"
                     r"(?i:access to (?:the )?(?:model|repo)\S* is restricted)|"
                     r"is a gated repo|trying to access a gated repo|"
                     r"(?i:invalid api key|api key is invalid|authentication failed)"),
    # the hub's offline mode (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE, local_files_only) asked
    # for a file its cache does not hold: the job's settings (before MR-ROOT-080's network)
    RootRule("MR-ROOT-123", C, "The job runs in offline mode and the model or data set it asks "
             "for is not in the cache", "Download it into the cache the job uses beforehand "
             "(huggingface-cli download, the same HF_HOME), or unset HF_HUB_OFFLINE / "
             "TRANSFORMERS_OFFLINE / local_files_only on a node with network.",
             message=r"outgoing traffic has been disabled|offline mode is enabled|"
                     r"HF_HUB_OFFLINE=1|TRANSFORMERS_OFFLINE=1|HF_DATASETS_OFFLINE=1"),
    # a download that never reached its host: an offline compute node, a proxy, DNS
    RootRule("MR-ROOT-080", E, "The job could not reach the network to download what it "
             "needs (an offline node, a proxy, a name that does not resolve)", "Download the "
             "model or data beforehand on a machine with network and point the job at the local "
             "copy (HF_HUB_OFFLINE=1 with a filled cache), or set the proxy the node needs.",
             message=r"Network is unreachable|Temporary failure in name resolution|Name or "
                     r"service not known|nodename nor servname provided|getaddrinfo failed|"
                     r"Failed to establish a new connection|couldn't connect to '?https?://|"
                     r"The read operation timed out|Read timed out\."),
    RootRule("MR-ROOT-035", C, "A model or file path the job was given does not exist",
             "Check the model name or path (a local folder needs its config and weights; a hub "
             "name needs access and the network).", types=("OSError", "EnvironmentError",
                                                         "HFValidationError",
                                                         "RepositoryNotFoundError",
                                                         "EntryNotFoundError"),
             message=r"does not appear to have a file named|Can't load|is not a local folder "
                     r"and is not a valid model identifier|No such file or directory|"
                     r"Repository Not Found|Incorrect path_or_model_id"),
    # a model factory asked for a name it does not know (timm.create_model), a model folder
    # whose config.json names no model_type (transformers): the name or path in the config
    RootRule("MR-ROOT-113", C, "The model name the job asks for is not one the library knows",
             "Check the model name in the config against the library's list (timm."
             "list_models('pattern')), or point at a folder whose config.json names its "
             "model_type; a model newer than the installed release needs an upgrade.",
             types=("RuntimeError", "KeyError", "ValueError"),
             message=r"Unknown model \(|Unrecognized model in \S+\. Should have a "
                     r"`model_type` key"),
    # torch.save into a folder that is not there: the output path the job was given
    RootRule("MR-ROOT-144", C, "A checkpoint is saved into a folder that does not exist",
             "Create the output folder before saving (os.makedirs(path, exist_ok=True)) or fix "
             "the output / checkpoint path in the config.", types=("RuntimeError",),
             message=r"Parent directory \S+ does not exist"),
    # the run's output or checkpoint folder exists from an earlier run, and the code will not
    # overwrite it unasked (`Use --overwrite or --resume`): the run's settings
    RootRule("MR-ROOT-153", C, "The run's output folder already exists from an earlier run",
             "Give the run a new output folder / experiment name, or say what to do with the "
             "old one (the script's overwrite or resume option).",
             types=("FileExistsError",)),
    # ... or a file torch.save cannot open: a missing folder, a full disk or no permission;
    # the message does not say which (no root class, the fix names all three)
    RootRule("MR-ROOT-145", None, "torch.save could not open the checkpoint file for writing",
             "Check the path the checkpoint is written to: its folder must exist and be "
             "writable, and the disk must have space for it (df -h on that folder).",
             types=("RuntimeError",), message=r"File .{1,300}? cannot be opened"),
    # a dataset name the config gives that the framework's registry does not list
    # (LLaMA-Factory's dataset_info.json, detectron2's DatasetCatalog, mmengine's registry):
    # a typo, or the registry file looked up from another working directory
    RootRule("MR-ROOT-141", C, "The config names a dataset the registry does not list",
             "Check the dataset name against the registry (dataset_info.json, the catalog) "
             "and that the job runs from the folder the registry path is relative to.",
             types=("ValueError", "KeyError", "AssertionError", "RuntimeError"),
             message=r"(?i)\b(?:undefined|unknown|unregistered) dataset\b|\bdataset "
                     r"['\"]?[\w./-]+['\"]? is not (?:registered|defined)\b"),
    RootRule("MR-ROOT-031", C, "A config key is missing or wrong",
             "Check the config file against what the code reads (the key in the message).",
             types=("ConfigAttributeError", "ConfigKeyError", "ConfigurationError",
                    "MissingMandatoryValue",
                    "InterpolationResolutionError", "ValidationError",
                    "ConfigCompositionException", "OverrideParseException",
                    "MissingConfigException")),
    # a config library's own lookup of a key the config does not hold (OpenMMLab's Config
    # and ConfigDict, addict / easydict dicts, a yacs CfgNode): the config file's, not the code's
    RootRule("MR-ROOT-117", C, "The config lacks a key the code reads",
             "Add the key the message names to the config file (or the base config it "
             "inherits), or use the config version the code was written for.",
             types=("KeyError", "AttributeError"), raised_in=LIBRARY,
             packages=("mmengine", "mmcv", "addict", "easydict", "yacs", "ml_collections"),
             function=r"__missing__|__getattr__|__getitem__"),
    RootRule("MR-ROOT-036", C, "Hydra refused the config or an override",
             "Check the override against the config groups (`python train.py --help`); quote a "
             "value with commas (key='a,b') or give a list as key=[a,b].",
             message=r"Could not override '|Key '[^']+' is not in struct|"
                     r"Could not (?:find|load) '|Ambiguous value for argument '|"
                     r"Error parsing override '"),
    # torch >= 2.0's launcher passes --local-rank; a script written for torch 1.x parses
    # --local_rank only
    RootRule("MR-ROOT-049", E, "The launcher passes --local-rank, which a script for older "
             "torch does not parse", "Launch with torchrun (the script reads LOCAL_RANK from "
             "the environment) or accept both spellings: parser.add_argument('--local-rank', "
             "'--local_rank', type=int).", message=r"unrecognized arguments: --local-rank"),
    # `python tools/dist_train.sh`: a shell script handed to Python
    RootRule("MR-ROOT-092", C, "A shell script was run with python", "Run the script with "
             "bash (`bash tools/dist_train.sh CONFIG GPUS` or ./tools/dist_train.sh), not "
             "python.", types=("SyntaxError",),
             message=r"File \"[^\"\n]+\.(?:sh|bash|zsh|bat|cmd|ps1)\", line \d+"),
    # the stdlib's configparser without the section or key the code reads: the .ini/.cfg file
    RootRule("MR-ROOT-093", C, "The config file lacks the section or key the code reads",
             "Add the section (or key) the message names to the .ini/.cfg file the run reads, "
             "or point the run at the right file (configparser reads a missing file as empty).",
             types=("KeyError",), message=r"configparser\.py\", line \d+, in __getitem__"),
    # syntax the running Python does not know: f-strings (3.6), := (3.8)
    RootRule("MR-ROOT-094", E, "The code uses syntax newer than the Python that runs it",
             "Run it with the Python version the repo needs (an f-string needs 3.6, := 3.8, "
             "match 3.10): check `python --version` in the job's environment.",
             types=("SyntaxError",), scope="raise",
             message=r"\bf[\"'][^\"'\n]*\{|:="),
    # raised while the script parses its own command line (fairseq's parse_args_and_arch
    # raising on a command without its data argument): the command, not the code
    RootRule("MR-ROOT-083", C, "The script refused its command line while parsing it",
             "Check the command against the script's --help: a required argument (the data "
             "directory, the task, the architecture) missing or misspelled.",
             function=r"(?i)parse_?\w*args\w*|parse_(?:opts?|options|arguments)\w*|"
                      r"get_?(?:args|arguments|parser|opts?)"),
    # Lightning: the module lacks a hook the Trainer was asked to run (Trainer.test without
    # a test_dataloader): the training code, not a setting
    RootRule("MR-ROOT-084", K, "The LightningModule lacks a method the Trainer was asked to "
             "run", "Define the method the message names on the LightningModule (or its "
             "DataModule), or do not call the Trainer entry point that needs it.",
             types=("MisconfigurationException",),
             message=r"No [`'\"]?\w+\(\)[`'\"]? method defined"),
    *LAUNCH_RULES,
    RootRule("MR-ROOT-063", C, "The checkpoint to resume from or load is not where the run "
             "looks", "Point the resume / checkpoint setting at an existing checkpoint folder "
             "(one holding the weights and trainer state), or leave it unset to start fresh.",
             message=r"(?i)can't find a valid checkpoint|failed to resume from checkpoint|"
                     r"no (?:valid )?checkpoints? (?:found|"
                     r"exists?)|checkpoint[^\n]{0,60}(?:not found|does not exist)"),
    RootRule("MR-ROOT-064", C, "The run records its git commit but is not run from inside "
             "a git checkout", "Run from the repository's clone (not a copied or downloaded "
             "folder), or turn the commit logging off in the config.",
             types=("InvalidGitRepositoryError", "NoSuchPathError", "GitCommandError")),
    RootRule("MR-ROOT-073", C, "The file loaded as a checkpoint is not one (a saved web page, "
             "a git-lfs pointer, a cut or empty download)", "Look at the file's first bytes "
             "(head -c 200 FILE): download it again (git lfs pull for a pointer), or point the "
             "run at the real checkpoint.", types=("UnpicklingError", "RuntimeError", "EOFError"),
             packages=("torch",), message=r"invalid load key|PytorchStreamReader failed|failed "
                                          r"finding central directory|Ran out of input"),
    RootRule("MR-ROOT-076", C, "The checkpoint lacks a key the code reads: it is another kind "
             "of file than the code expects (weights only, another model's)", "Check which file "
             "the run loads (--resume, --ckpt, --weights): give it the kind of checkpoint the "
             "code saves, or read the keys the file has (print(ckpt.keys())).",
             types=("KeyError",), scope="raise",
             message=r"(?:ckpt|checkpoint|state_dict|snapshot|pretrained)\w*\s*\[\s*['\"]|"
                     r"torch\.load\([^)]*\)\s*\["),
    RootRule("MR-ROOT-105", C, "The dataset name the config gives is not registered",
             "Register the dataset before building the trainer (DatasetCatalog.register and "
             "MetadataCatalog in detectron2), under the name the config uses; a one-letter "
             "name is a string given where a tuple was meant: DATASETS.TRAIN = ('my_train',).",
             types=("KeyError",),
             message=r"Dataset '[^'\n]*' is not registered|DatasetCatalog\._REGISTERED\[|"
                     r"catalog\.py\", line \d+, in get\b"),
    RootRule("MR-ROOT-071", C, "More GPUs talk peer-to-peer than CUDA allows (8 peers a GPU)",
             "Use at most 8 GPUs a node in one peer-to-peer group, or turn P2P off "
             "(NCCL_P2P_DISABLE=1) for larger jobs.",
             message=r"peer mapping resources exhausted|cudaErrorTooManyPeers"),
    RootRule("MR-ROOT-058", C, "NCCL refused how the job uses it (ncclInvalidUsage)",
             "Give each rank its own GPU (torch.cuda.set_device(local_rank) before "
             "init_process_group; one process a GPU), and make every rank call the same "
             "collectives in the same order.",
             # two ranks on one GPU: NCCL's own check of the same misuse
             message=r"ncclInvalidUsage|NCCL error[^\n]*invalid usage|Duplicate GPU detected"),
    # the HF Trainer reads a loss the model did not return: the batches carry no labels (a
    # collator or column setting), or the model is a base model without a head
    RootRule("MR-ROOT-101", C, "The model returned no loss: its batches carry no labels",
             "Give the batches a `labels` column (the data collator, label_names, "
             "remove_unused_columns=False where a custom column is dropped), or load the model "
             "with its task head (AutoModelFor...), which computes the loss from them.",
             types=("KeyError", "ValueError"), function=r"compute_loss",
             message=r"KeyError: 'loss'|The model did not return a loss from the inputs"),
    # more GPUs asked for than the job was given (none at all is the install's: MR-ROOT-008)
    RootRule("MR-ROOT-099", C, "The job asks for more GPUs than it was given",
             "Ask for as many GPUs as the job gets (--gpus / devices / num_gpus in the "
             "config), or request more from the scheduler (--gres=gpu:N) and check "
             "CUDA_VISIBLE_DEVICES.",
             message=r"You requested gpus?: [^\n]{0,60}\s*But your machine only has: \[\d|"
                     r"(?i:\brequires? \d+ GPUs?,? but only [1-9]\d* GPUs?(?: are| is)? "
                     r"available)"),
    # accelerate / HF FSDP auto-wrap told a block class name the model does not have
    RootRule("MR-ROOT-098", C, "FSDP was told to wrap a layer class the model does not have",
             "Set fsdp_transformer_layer_cls_to_wrap (accelerate config, or the Trainer's "
             "fsdp_config) to the model's block class (LlamaDecoderLayer, T5Block, ...: "
             "print(model) shows it), or wrap by size instead.",
             message=r"Could not find the transformer layer class to wrap"),
    # a one-cycle schedule built for fewer steps than the loop takes (epochs, accumulation)
    RootRule("MR-ROOT-097", C, "The learning-rate schedule was built for fewer steps than the "
             "run takes", "Build the scheduler with the steps the loop really takes "
             "(OneCycleLR(total_steps=epochs * len(loader) // accumulation), counting a "
             "resume), or stop stepping it at its end.", types=("ValueError",),
             message=r"Tried to step \d+ times?\. The specified number of total steps is \d+"),
    RootRule("MR-ROOT-052", C, "DDP saw a parameter's gradient twice in one step "
             "(reentrant checkpointing or shared weights with unused-parameter detection)",
             "Use non-reentrant gradient checkpointing (gradient_checkpointing_kwargs="
             "{'use_reentrant': False}), or turn unused-parameter detection off "
             "(find_unused_parameters=False / ddp_find_unused_parameters=False), or "
             "static_graph=True.",
             message=r"Expected to mark a variable ready only once|has been marked as ready "
                     r"twice"),
    # bf16 asked of a card or a build without it (a V100, a T4): transformers' and accelerate's
    # checks at start-up
    RootRule("MR-ROOT-120", C, "The run asks for bf16 on a GPU or build that does not support "
             "it", "Use fp16 (or fp32) on cards before Ampere (V100, T4, P100): --fp16 instead "
             "of --bf16, mixed_precision='fp16' in the accelerate / DeepSpeed config.",
             message=r"(?i)Your setup doesn't support bf16|bf16 mixed precision requires "
                     r"PyTorch >= [\d.]+ and a supported device|"
                     r"\bbf16\b[^\n]{0,40}\bonly supported on\b"),
    # a process started under the spawn start method (Windows, macOS; DataLoader workers,
    # multiprocessing) re-imports the main script: one without `if __name__ == "__main__":`
    # starts its training again in the child
    RootRule("MR-ROOT-121", K, "The script starts processes (DataLoader workers, spawn) without "
             "an `if __name__ == \"__main__\":` guard", "Put the script's top-level code "
             "under `if __name__ == \"__main__\":` (spawned children import the main module), "
             "or set num_workers=0 to confirm.",
             message=r"An attempt has been made to start a new process before the\s+current "
                     r"process has finished its bootstrapping phase"),
    # scaled_dot_product_attention with only backends the inputs or the card cannot use
    # (flash forced on a pre-Ampere card, or with fp32 inputs): the backend setting
    RootRule("MR-ROOT-122", C, "Attention was limited to kernels that cannot run these inputs "
             "on this GPU", "Let SDPA fall back (allow the math / efficient backends in "
             "sdpa_kernel / sdp_kernel, or turn the repo's flash flag off), or give the flash "
             "kernel what it needs: fp16/bf16 inputs, a supported head dim, an Ampere+ card.",
             message=r"No available kernel\.\s+Aborting execution"),
    # a division by the count of what the data loader gave (`total_time / len(iterable)`,
    # `loss / epoch_samples`, `max_iter / epoch_size`): it gave nothing, the data path is
    # empty or wrong, or there are fewer samples than one batch on every GPU (drop_last)
    RootRule("MR-ROOT-125", C, "The data loader gave no batch: a division by its length "
             "failed", "Check the data path and the split the job reads (an empty folder, a "
             "wrong annotation file) and that the data holds at least batch_size x GPUs "
             "samples when drop_last is set.", types=("ZeroDivisionError",), scope="raise",
             message=r"/\s*\(?\s*(?:len\(|[\w.\[\]'\"]*(?:samples|loader|dataset|iterable|"
                     r"batches|steps_per_epoch|epoch_size|iters_per_epoch|num_batch\w*|"
                     r"n_batch\w*)\b)"),
    # an optimizer's state from a checkpoint of another model (parameters added or removed
    # since it was saved): the resume, not the training code
    RootRule("MR-ROOT-128", C, "The checkpoint's optimizer state does not fit the model's "
             "parameters (the model changed since the checkpoint was saved)", "Load the model "
             "weights only and start a new optimizer (skip optimizer.load_state_dict), or "
             "resume with the code and settings that wrote the checkpoint.",
             types=("ValueError",),
             message=r"loaded state dict contains a parameter group that doesn't match the "
                     r"size of optimizer's group|loaded state dict has a different number of "
                     r"parameter groups"),
    # a checkpoint's per-GPU RNG states restored on a run with fewer GPUs (torch.cuda's
    # set_rng_state asks for a device this run does not have): the resume's setup
    RootRule("MR-ROOT-150", C, "The checkpoint holds RNG states of more GPUs than this run "
             "has (resumed on fewer GPUs than it was saved with)", "Resume on as many GPUs "
             "as the checkpoint was saved with, or skip restoring the per-GPU RNG states "
             "(load only the states of the devices there are).", types=("IndexError",),
             message=r"default_generators\[idx\]|in set_rng_state"),
    # a weight of size 0 met in an element-wise op: a shard DeepSpeed ZeRO-3 or FSDP left
    # empty on this rank (merging LoRA into it, editing it), read outside a gather
    RootRule("MR-ROOT-152", C, "A parameter is an empty shard here (ZeRO-3 / FSDP partitions "
             "it) and was used outside a gather", "Gather it first (deepspeed.zero."
             "GatheredParameters, FSDP.summon_full_params), or do this step (merging LoRA, "
             "editing weights) without ZeRO-3 / FSDP, on the full model in one process.",
             # (at a dimension past the first: a flat empty shard against a matrix; an empty
             # batch meets the other tensor at dimension 0)
             message=r"The size of tensor [ab] \(0\) must match the size of tensor [ab] "
                     r"\([1-9]\d*\) at non-singleton dimension [1-9]"),
    # PEFT's LoRA target_modules naming no module of the base model (a pattern for another
    # architecture, a typo); an empty list is what the code's own module discovery found
    RootRule("MR-ROOT-129", C, "The LoRA target modules the config names match no module of "
             "the base model", "Print the model's module names (model.named_modules()) and "
             "set target_modules to names or a pattern of this architecture "
             "('q_proj', 'v_proj', ... or 'all-linear').", types=("ValueError",),
             message=r"Target modules (?!\[\]|set\(\))\S[^\n]* not found in the base model"),
    # a sample longer than the max length the job is configured for (verl's prompt length,
    # a tokenizer's max_length): the setting or the data's filter, not the code
    RootRule("MR-ROOT-130", C, "A sequence is longer than the max length the job is set for",
             "Raise the max length setting (max_prompt_length, max_length) or filter / "
             "truncate the longer samples before training.",
             message=r"(?i)(?:length|len)\w*[ =]+\d+ is (?:larger|greater|longer) than "
                     r"\w*max_\w*(?:length|len)"),
    # an lr scheduler built with last_epoch (a resume) on an optimizer whose state was not
    # loaded: the resume's order or settings, not the training code
    RootRule("MR-ROOT-131", C, "A scheduler resumes (last_epoch set) on an optimizer whose "
             "saved state was not loaded", "Load the optimizer's state_dict before building "
             "the scheduler, or build it with last_epoch=-1 and load the scheduler's own "
             "state_dict; starting from weights only, do not pass the checkpoint's epoch.",
             types=("KeyError",), message=r"param 'initial_lr' is not specified in "
                                          r"param_groups\[\d+\] when resuming"),
    RootRule("MR-ROOT-034", C, "A required setting is missing or out of range",
             "Check the setting the message names.", types=("ValueError", "KeyError",
                                                           "AssertionError"),
             message=r"(?i)\bconfig\b|\bcfg\b|\bargs?\.|\boption\b|--\w+|"
                     r"(?:must|should) be (?:set|provided|specified|given|one of|positive|"
                     r"divisible)|"
                     r"\bnot supported\b|"
                     r"\binvalid (?:value|argument)\b|"
                     # two settings that do not go together
                     r"\bnot compatible with\b|\bincompatible with\b|"
                     r"\bcannot be used (?:together )?with\b|\bmutually exclusive\b|"
                     r"\bdoes not match(?:es)? the\b|"
                     # a setting the message tells the user to set otherwise ("does not
                     # require `num_warmup_steps`. Set None or 0.", "please set --lr")
                     r"\bdoes not (?:require|accept)\b|"
                     r"(?:^|[.:;] )set [`'\"]?\w+[`'\"]? (?:to|or)\b|"
                     r"\bplease (?:set|specify)\b|please use [`'\"]?[A-Z][A-Z0-9_]+=\S|"
                     # the class count set against the list of class names it goes with
                     # (`assert num_classes == len(classnames)`)
                     r"\bassert\s+(?:self\.|cfg\.)?n(?:um)?_?(?:classes|labels)\s*==\s*len\(|"
                     # a key read from a settings dict: `net_options['max_epochs']`
                     r"(?:cfg|config|conf|opts?|options|hparams|hyp|settings)\w*\s*\[\s*['\"]",
             scope="raise"),
)
