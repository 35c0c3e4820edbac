"""Root classes decided by where a failure was raised, not only by what it says."""

from __future__ import annotations

import pytest

from minrepro.diagnose.roots import root_of
from minrepro.model import package_of
from tests.test_failures import diagnose


def tb(*frames: tuple[str, str, str], exc: str) -> str:
    """A traceback of (file, function, code line) frames, outermost first."""
    body = "".join(f'  File "{path}", line 10, in {function}\n    {code}\n'
                   for path, function, code in frames)
    return f"Traceback (most recent call last):\n{body}{exc}\n"


USER = ("/srv/app/train.py", "train", "out = model.forward_train(batch)")
GETATTR = ("/env/lib/python3.8/site-packages/torch/nn/modules/module.py", "__getattr__",
           "type(self).__name__, name))")


@pytest.mark.parametrize(("log", "root"), [
    # an attribute the user's code asked a DDP wrapper for: the user's code
    (tb(USER, GETATTR, exc="torch.nn.modules.module.ModuleAttributeError: "
                           "'DistributedDataParallel' object has no attribute 'forward_train'"),
     "code"),
    (tb(USER, GETATTR, exc="AttributeError: 'BiEncoderModel' object has no attribute 'encode'"),
     "code"),
    # one library reading a field another library's installed version lacks: the versions
    (tb(USER, ("/env/lib/python3.9/site-packages/peft/tuners/lora.py", "_find_and_replace",
               '"memory_efficient_backward": target.state.memory_efficient_backward,'),
        exc="AttributeError: 'MatmulLtState' object has no attribute "
            "'memory_efficient_backward'"), "environment"),
    # a package that raises in its own module body while being imported: the install
    (tb(("tools/train.py", "<module>", "from mmengine.config import Config"),
        ("/env/lib/python3.8/site-packages/mmengine/__init__.py", "<module>",
         "raise NotImplementedError('This is a project in development')"),
        exc="NotImplementedError: This is a project in development"), "environment"),
    (tb(USER, exc="RuntimeError: Default process group has not been initialized, please make "
                  "sure to call init_process_group."), "config"),
    (tb(USER, exc="RuntimeError: Distributed package doesn't have NCCL built in"), "config"),
    (tb(USER, exc="ValueError: Error initializing torch.distributed using env:// rendezvous: "
                  "environment variable RANK expected, but not set"), "config"),
    ("usage: main_pretrain.py [-h] [--local_rank LOCAL_RANK]\n"
     "main_pretrain.py: error: unrecognized arguments: --local-rank=1\n", "environment"),
    # a call that does not fit its callee, printed without frames: the caller's call
    ("TypeError: __init__() got multiple values for argument 'model'\n", "code"),
    ("run_dt_acc.py, line 230, in main\n    trainer = Trainer(model, model_simu, tconf)\n"
     "TypeError: __init__() takes 5 positional arguments but 6 were given\n", "code"),
    # raised by a library's own call into another part of it (an unpacked release tree)
    (tb(USER, (r"d:\src\detectron2-0.3\detectron2\config\config.py", "_get_args_from_config",
               "ret = from_config_func(*args, **kwargs)"),
        exc="TypeError: _train_loader_from_config() takes 1 positional argument but 2 were "
            "given"), "environment"),
    (tb(USER, ("/opt/conda/lib/python3.11/site-packages/triton/compiler/compiler.py", "compile",
               "raise CompilationError(fn.src, node, repr(e))"),
        exc="triton.compiler.errors.CompilationError: at 114:14:"), "environment"),
    (tb(USER, ("/env/lib/python3.11/site-packages/torch/_tensor.py", "__iter__",
               'raise TypeError("iteration over a 0-d tensor")'),
        exc="TypeError: iteration over a 0-d tensor"), "code"),
    (tb(USER, ("/env/lib/python3.10/site-packages/torch/autograd/__init__.py", "backward",
               "Variable._execution_engine.run_backward("),
        exc="RuntimeError: Expected to mark a variable ready only once. This error is caused "
            "by one of the following reasons"), "config"),
    ("ERROR: /env/bin/python: can't open file '/srv/torchtune/full_finetune.py': [Errno 2] No "
     "such file or directory\n", "config"),
    (tb(USER, ("/env/lib/python3.10/site-packages/transformers/modeling_utils.py",
               "from_pretrained", "raise ValueError("),
        exc="ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or "
            "with passing a `device_map`."), "config"),
    ("AssertionError: The `num_classes` (1) in Shared2FCBBoxScoreHead of MMDataParallel does "
     "not matches the length of `CLASSES` 80) in CocoDataset\n", "config"),
    ("AttributeError: 'XGRPOTrainer' object has no attribute 'num_iterations'. Did you mean: "
     "'num_generations'?\n", "environment"),
    (tb(USER, exc="AttributeError: 'Trainer' object has no attribute 'accelerator_backend'"),
     "environment"),
    # ... read off `self` by the repo's own method: its class never set it
    (tb(("/srv/sd-scripts/flux_train_network.py", "sample_images",
         "accelerator, args, epoch, flux, self.sample_prompts_te_outputs"),
        exc="AttributeError: 'FluxNetworkTrainer' object has no attribute "
            "'sample_prompts_te_outputs'"), "code"),
    (tb(("train_coco.py", "<module>", "register_coco_instances('coco_2017_train', {}, j, d)"),
        ("/env/lib/python3.7/site-packages/detectron2/data/catalog.py", "register",
         "assert name not in self"),
        exc="AssertionError: Dataset 'coco_2017_train' is already registered!"), "code"),
    ("AttributeError: 'ConfigDict' object has no attribute 'pretrained'\n", "config"),
    ("AttributeError: 'Namespace' object has no attribute 'local_rank'\n", "config"),
    ("AttributeError: 'LlamaConfig' object has no attribute 'rope_theta'\n", "environment"),
    ("main.py: error: 'Configuration check failed :: No action for destination key "
     "\"trainer.process_position\" to check its value.'\n", "config"),
    # a tensor op in the user's own code refused its inputs; a CUDA error there decides nothing
    (tb(USER, exc="RuntimeError: shape '[4096, -1]' is invalid for input of size 117504000"),
     "code"),
    (tb(USER, exc="RuntimeError: cudnn RNN backward can only be called in training mode"), "code"),
    (tb(USER, exc="RuntimeError: a leaf Variable that requires grad is being used in an "
                  "in-place operation."), "code"),
    (tb(USER, exc="RuntimeError: Found NVIDIA GeForce GTX 1080 Ti which is too old to be "
                  "supported by the triton GPU compiler"), "environment"),
    (tb(USER, exc="RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:957, invalid usage, NCCL "
                  "version 21.0.3\nncclInvalidUsage: This usually reflects invalid usage of NCCL"
                  " library"), "config"),
    # None read from the launcher's args: a setting left unset
    (tb(("/env/lib/python3.7/dist-packages/accelerate/commands/launch.py", "simple_launcher",
         "mixed_precision = PrecisionType(args.mixed_precision.lower())"),
        exc="AttributeError: 'NoneType' object has no attribute 'lower'"), "config"),
    (tb(USER, ("/env/lib/python3.8/site-packages/peft/tuners/lora.py",
               "mark_only_lora_as_trainable", "raise NotImplementedError"),
        exc="NotImplementedError"), "config"),
    (tb(USER, exc="RuntimeError: NCCL error in: DataChannelNccl.cpp:600, unhandled cuda error"),
     "environment"),
    (tb(USER, ("/env/lib/python3.10/site-packages/transformers/trainer.py", "train",
               'raise ValueError(f"Can\'t find a valid checkpoint at {resume_from_checkpoint}")'),
        exc="ValueError: Can't find a valid checkpoint at out/checkpoint-8000"), "config"),
    (tb(USER, ("/env/lib/python3.8/site-packages/git/repo/base.py", "__init__",
               "raise InvalidGitRepositoryError(epath)"),
        exc="git.exc.InvalidGitRepositoryError: /content/repo"), "config"),
    (tb(USER, ("/env/lib/python3.8/site-packages/torch/utils/data/dataloader.py", "__next__",
               "raise StopIteration"), exc="StopIteration"), "code"),
    (tb(USER, ("/srv/yolov7/utils/general.py", "check_dataset",
               "raise Exception('Dataset not found.')"), exc="Exception: Dataset not found."),
     "config"),
    (tb(("/srv/x3d/train.py", "class_to_list", "l = [int(element) for element in l]"),
        exc="ValueError: invalid literal for int() with base 10: '1.1'"), "data"),
    (tb(USER, ("/env/lib/python3.12/site-packages/torch/functional.py", "einsum",
               "return _VF.einsum(equation, operands)"),
        exc="RuntimeError: einsum(): fewer operands were provided than specified in the "
            "equation"), "code"),
    # tensors whose sizes do not fit, quoted without frames: the code that combines them
    ("RuntimeError: Sizes of tensors must match except in dimension 1. Got 0 and 1\n", "code"),
    # a sample that loaded as None, inside a worker
    (tb(("/env/lib/python3.8/site-packages/torch/utils/data/_utils/worker.py", "_worker_loop",
         "data = fetcher.fetch(index)"),
        ("/srv/app/dataset.py", "__getitem__", "img = img[:, :, ::-1]"),
        exc="TypeError: Caught TypeError in DataLoader worker process 0.\nOriginal Traceback "
            "(most recent call last):\nTypeError: 'NoneType' object is not subscriptable"),
     "data"),
    (tb(USER, ("/srv/zod/run_toy.py", "get_distribution",
               "with open(config.density_parameters_path) as f:"),
        exc="TypeError: expected str, bytes or os.PathLike object, not NoneType"), "config"),
    ("RuntimeError: CUDA error: peer mapping resources exhausted\n", "config"),
    # an assert inside torch with none of the user's frames shown: torch's own invariant
    ('  File "/env/lib/python3.7/site-packages/torch/optim/adam.py", line 255, in '
     '_single_tensor_adam\n    assert not step_t.is_cuda, "If capturable=False, state_steps '
     'should not be CUDA tensors."\nAssertionError: If capturable=False, state_steps should not'
     " be CUDA tensors.\n", "framework"),
    # a COCO annotation file without its 'categories'
    (tb(USER, ("/env/lib/python3.6/dist-packages/pycocotools/coco.py", "getCatIds",
               "cats = self.dataset['categories']"), exc="KeyError: 'categories'"), "data"),
    # torch.load of a web page or a git-lfs pointer saved under the checkpoint's name
    (tb(("train.py", "train", "ckpt = torch.load(weights, map_location='cpu')"),
        ("/usr/lib/python3.10/dist-packages/torch/serialization.py", "_legacy_load",
         "magic_number = pickle_module.load(f, **pickle_load_args)"),
        exc="_pickle.UnpicklingError: invalid load key, '<'."), "config"),
    (tb(USER, ("/env/lib/python3.10/site-packages/torch/serialization.py", "__init__",
               "super().__init__(torch._C.PyTorchFileReader(name_or_buffer))"),
        exc="RuntimeError: PytorchStreamReader failed reading zip archive: failed finding "
            "central directory"), "config"),
    # a library's code reading its own object's attribute that is not there: the library
    (tb(USER, ("/venv/lib/python3.10/site-packages/lycoris/modules/diag_oft.py",
               "apply_max_norm", "orig_norm = self.oft_diag.to(device).norm()"), GETATTR,
        exc="AttributeError: 'DiagOFTModule' object has no attribute 'oft_diag'"), "framework"),
    # ... but a library reading the attribute of a module the user's code built is not that
    (tb(USER, ("/venv/lib/python3.10/site-packages/lycoris/kohya.py", "apply",
               "scale = network.oft_diag"), GETATTR,
        exc="AttributeError: 'Net' object has no attribute 'oft_diag'"), "code"),
    # a registry without the model the config names: not the release (or fork) that has it
    (tb(USER, ("/env/lib/python3.7/site-packages/mmcv/utils/registry.py", "build_from_cfg",
               "f'{obj_type} is not in the {registry.name} registry')"),
        exc="KeyError: 'MASTER is not in the models registry'"), "environment"),
    # a checkpoint of another kind than the code reads
    (tb(("./train.py", "<module>", "generator.module.load_state_dict(ckpt['generator'])"),
        exc="KeyError: 'generator'"), "config"),
    # a subclass's call of its framework base's __init__ that the installed release refuses
    (tb(("tools/train_net.py", "__init__",
         "super(DefaultTrainer, self).__init__(model, data_loader, optimizer)"),
        exc="TypeError: __init__() takes 1 positional argument but 4 were given"),
     "environment"),
    # a label used as an index past the classes
    (tb(("utils/utils.py", "build_targets", "tcls[b, best_n, gj, gi, target_labels] = 2"),
        exc="RuntimeError: index 15 is out of bounds for dim with size 2"), "data"),
    # a checkpoint dict of another kind, under any prefix of the name
    (tb(("train.py", "main_worker", "optimizer.load_state_dict(utils_state_dict['optimizer'])"),
        exc="KeyError: 'optimizer'"), "config"),
    # a key read from the run's settings dict
    (tb(("train.py", "<module>", "max_epochs    = int(net_options['max_epochs'])"),
        exc="KeyError: 'max_epochs'"), "config"),
    # the repo's own version check
    (tb(("tools/train.py", "<module>", "import mmdet"), exc="AssertionError: MMCV==1.3.1 is "
        "used but incompatible. Please install mmcv>=1.0.5, <=1.0.5."), "environment"),
    # a DataLoader iterator asked for the Python 2 `.next()`
    (tb(("main.py", "get_batch", "batch = self.iter.next()"), exc="AttributeError: "
        "'_MultiProcessingDataLoaderIter' object has no attribute 'next'"), "environment"),
    # torch's Module.__call__ only hands the call on: the user's forward does not fit it
    (tb(("models/pix2pix.py", "optimize_parameters", "self.fake = self.netG(self.real, z)"),
        ("/env/lib/python3.8/site-packages/torch/nn/modules/module.py", "_call_impl",
         "result = self.forward(*input, **kwargs)"),
        exc="TypeError: forward() takes 3 positional arguments but 4 were given"), "code"),
    # a download from an offline compute node
    (tb(("train.py", "main", "model = timm.create_model('vit_base', pretrained=True)"),
        ("/usr/lib/python3.10/socket.py", "create_connection", "raise err"),
        exc="OSError: [Errno 101] Network is unreachable"), "environment"),
    ("OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
     "find it in the cached files and it looks like bert-base-uncased is not the path to a "
     "directory containing a file named config.json.\n", "environment"),
    # a logging service's upload that timed out on the network (wandb, the hub)
    (tb(("train.py", "train", "wandb.log(metrics)"),
        ("/usr/lib/python3.10/ssl.py", "read", "return self._sslobj.read(len, buffer)"),
        exc="TimeoutError: The read operation timed out"), "environment"),
    # BCE: a head of 6 outputs against 15 label columns
    ("ValueError: Target size (torch.Size([8, 15])) must be the same as input size "
     "(torch.Size([8, 6]))\n", "config"),
    # a data folder that is not there, in the repo's own words
    (tb(("train_dreambooth.py", "__init__",
         'raise ValueError("Instance images root doesn\'t exists.")'),
        exc="ValueError: Instance images root doesn't exists."), "config"),
    # a batch larger than the data set
    (tb(("fit.py", "main", "run(cfg)"), ("/opt/venv/lib/python3.9/site-packages/binner/"
        "encode.py", "trainmodel", "raise ValueError('Last batch size exceeds dataset length')"),
        exc="ValueError: Last batch size exceeds dataset length"), "config"),
    ("ValueError: the validation split (12 samples) is smaller than the batch size 32\n",
     "config"),
    # an assert of the repo's own data reading, directly or in a helper its __getitem__ calls
    (tb(("main.py", "train", "data = read_corpus(path, max_length=128)"),
        ("utils.py", "read_corpus", "assert len(label_ids) == max_length"),
        exc="AssertionError"), "data"),
    (tb(("train.py", "train_one_epoch", "for batch in loader:"),
        ("/env/lib/python3.10/site-packages/torch/utils/data/_utils/fetch.py", "fetch",
         "data = [self.dataset[idx] for idx in possibly_batched_index]"),
        ("data/clips.py", "__getitem__", "idx = subsample(first, last, self.frames)"),
        ("data/util.py", "subsample", "assert last - first + 1 >= n, 'too few frames'"),
        exc="AssertionError: too few frames"), "data"),
    # ... an assert elsewhere in the training code stays the code's
    (tb(("train.py", "train_step", "assert loss.dim() == 0"), exc="AssertionError"), "code"),
    # the script raising while it parses its command line
    (tb(("/src/fairseq/fairseq_cli/train.py", "cli_main", "args = options.parse_args_and_arch("
         "parser)"), ("/src/fairseq/fairseq/options.py", "parse_args_and_arch",
                      "raise RuntimeError()"), exc="RuntimeError"), "config"),
    # Lightning asked to run a hook the module does not define
    ("pytorch_lightning.utilities.exceptions.MisconfigurationException: No `val_dataloader()` "
     "method defined to run `Trainer.validate`.\n", "code"),
    # a local unset on a library's own code path
    (tb(("train.py", "train", "optimizer.step()"),
        ("/venv/lib/python3.10/site-packages/someopt/opt.py", "step_param",
         "if warm_steps > 0 and k == warm_steps:"),
        exc="UnboundLocalError: local variable 'warm_steps' referenced before assignment"),
     "framework"),
    (tb(("train.py", "main", "print(loss)"),
        exc="UnboundLocalError: local variable 'loss' referenced before assignment"), "code"),
    # DeepSpeed's op compiled on first use, never built
    ("AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'\n",
     "environment"),
    # BatchNorm handed the epoch's last batch of one sample
    (tb(USER, ("/env/lib/python3.10/site-packages/torch/nn/functional.py", "_verify_batch_size",
               'raise ValueError(f"Expected more than 1 value per channel when training, got '
               'input size {size}")'),
        exc="ValueError: Expected more than 1 value per channel when training, got input size "
            "torch.Size([1, 128])"), "config"),
    # a checkpoint that pickled a function of the training script
    ("AttributeError: Can't get attribute 'exclude_bias_and_norm' on <module '__main__' from "
     "'/srv/app/evaluate.py'>\n", "config"),
    # torchrun's child killed by SIGBUS: the container's /dev/shm
    ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0 "
     "(pid: 5406) of binary: /usr/bin/python3\n", "environment"),
    # a module named after corruption in the frames is no corrupt file
    (tb(("pretrain.py", "main", "gen.test_link(valid_data)"),
        ("/srv/kbgan/corrupter.py", "test_link", "n = config().test_batch_size"),
        exc="KeyError: 'test_batch_size'"), "config"),
    (tb(USER, exc="OSError: image file is truncated (12 bytes not processed)"), "data"),
    # a device index past the visible GPUs (one GPU on a Colab machine, set_device(1))
    (tb(("train.py", "main", "torch.cuda.set_device(opt.local_rank)"),
        ("/usr/local/lib/python3.7/dist-packages/torch/cuda/__init__.py", "set_device",
         "torch._C._cuda_setDevice(device)"),
        exc="RuntimeError: CUDA error: invalid device ordinal"), "config"),
    # a compiled library's own C++ assert, then the abort
    ("python: /project/lib/Analysis/Allocation.cpp:40: void mlir::triton::convert(): "
     "Assertion `!(a && b) && \"Unexpected layout\"' failed.\nAborted (core dumped)\n",
     "framework"),
    # a launch script handed to Python
    ('  File "./tools/dist_train.sh", line 3\n    CONFIG=$1\n           ^\n'
     "SyntaxError: invalid syntax\n", "config"),
    # an .ini file without the section read
    (tb(("train.py", "<module>", "model_name = config['train']['model']"),
        ("/env/lib/python3.7/configparser.py", "__getitem__", "raise KeyError(key)"),
        exc="KeyError: 'train'"), "config"),
    # an f-string on a Python older than 3.6
    ('  File "train/train_rl.py", line 117\n    name=f"{args.name}_seed{args.seed}",\n'
     "                ^\nSyntaxError: invalid syntax\n", "environment"),
    # ... but a plain syntax error stays the code's
    ('  File "train.py", line 12\n    if x = 3:\n         ^\nSyntaxError: invalid syntax\n',
     "code"),
    # a tensor attribute today's torch has, missing: the installed torch is older than the code
    (tb(USER, ("/srv/app/memory_table.py", "probability",
               "sum_prob = torch.exp(outputs.matmul(self.vectors.T) / t).sum(dim=1)"),
        exc="AttributeError: 'Tensor' object has no attribute 'T'"), "environment"),
    # ... one no torch has is the code's (a tensor used as a numpy array or a dict)
    (tb(USER, exc="AttributeError: 'Tensor' object has no attribute 'astype'"), "code"),
    # a checkpoint write the storage failed: the machine's file system
    (tb(USER, ("/env/lib/python3.7/site-packages/torch/serialization.py", "_save",
               "serialized_storages[key]._write_file(f, _should_read_directly(f))"),
        exc="RuntimeError: write(): fd 29 failed with Input/output error"), "environment"),
    # a logger or hub the job has no key or token for: the job's settings
    (tb(USER, ("/env/lib/python3.8/site-packages/wandb/sdk/wandb_login.py", "prompt_api_key",
               'raise UsageError("api_key not configured (no-tty). call " + directive)'),
        exc="wandb.errors.UsageError: api_key not configured (no-tty). call "
            "wandb.login(key=[your_api_key])"), "config"),
    (tb(USER, ("/env/lib/python3.10/site-packages/huggingface_hub/utils/_errors.py",
               "hf_raise_for_status", "raise GatedRepoError(message, response) from e"),
        exc="huggingface_hub.utils._errors.GatedRepoError: 401 Client Error. Cannot access "
            "gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/"
            "config.json."), "config"),
    # the Trainer asked the model for a loss it did not compute: no labels in the batches
    (tb(USER, ("/env/lib/python3.8/site-packages/transformers/trainer.py", "compute_loss",
               'loss = outputs["loss"] if isinstance(outputs, dict) else outputs[0]'),
        ("/env/lib/python3.8/site-packages/transformers/file_utils.py", "__getitem__",
         "return inner_dict[k]"), exc="KeyError: 'loss'"), "config"),
    (tb(USER, ("/env/lib/python3.10/site-packages/transformers/trainer.py", "compute_loss",
               "raise ValueError("),
        exc="ValueError: The model did not return a loss from the inputs, only the following "
            "keys: logits. For reference, the inputs it received are input_ids,attention_mask."),
     "config"),
    # BCELoss's kernel asserts: outputs not probabilities (the code), targets outside [0, 1]
    (tb(USER, exc="RuntimeError: CUDA error: device-side assert triggered\n"
                  "../aten/src/ATen/native/cuda/Loss.cu:94: operator(): block: [0,0,0], thread: "
                  "[5,0,0] Assertion `input_val >= zero && input_val <= one` failed."), "code"),
    (tb(USER, exc="RuntimeError: CUDA error: device-side assert triggered\n"
                  "../aten/src/ATen/native/cuda/Loss.cu:95: operator(): block: [0,0,0], thread: "
                  "[5,0,0] Assertion `target_val >= zero && target_val <= one` failed."), "data"),
    # a console that wrapped the message after "device-side assert" (torch 2's hint "to
    # enable device-side assertions" is in every CUDA error: no index assert by itself)
    (tb(USER, exc="RuntimeError: CUDA error: device-side assert \ntriggered"), "data"),
    # a Trainer subclass's training_step from before transformers 4.46: the versions
    (tb(USER, ("/env/lib/python3.12/site-packages/transformers/trainer.py",
               "_inner_training_loop",
               "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)"),
        exc="TypeError: Trainer.training_step() takes 3 positional arguments but 4 were given"),
     "environment"),
    (tb(USER, exc="TypeError: CustomTrainer.compute_loss() got an unexpected keyword argument "
                  "'num_items_in_batch'"), "environment"),
    # torch.compile without a working Triton: the install
    (tb(USER, ("/env/lib/python3.11/site-packages/torch/_inductor/scheduler.py",
               "create_backend", "raise TritonMissing(inspect.currentframe())"),
        exc="torch._inductor.exc.TritonMissing: Cannot find a working triton installation. "
            "Either the package is not installed or it is too old."), "environment"),
    # a breakpoint left in the code: the job stopped in pdb and quit
    (tb(USER, ("/env/lib/python3.8/bdb.py", "dispatch_line", "if self.quitting: raise BdbQuit"),
        exc="bdb.BdbQuit"), "code"),
    # more GPUs asked for than the job got: its settings; none visible at all: the install
    (tb(USER, ("/srv/FrameDiff/experiments/train_se3_diffusion.py", "start_training",
               'raise ValueError(f"require {n} GPUs, but only {m} GPUs available ")'),
        exc="ValueError: require 2 GPUs, but only 1 GPUs available "), "config"),
    (tb(USER, ("/env/lib/python3.8/site-packages/pytorch_lightning/utilities/device_parser.py",
               "_sanitize_gpu_ids", "raise MisconfigurationException("),
        exc="pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested "
            "gpu: [0, 1, 2, 3]\n But your machine only has: [0]"), "config"),
    (tb(USER, ("/env/lib/python3.8/site-packages/pytorch_lightning/utilities/device_parser.py",
               "_sanitize_gpu_ids", "raise MisconfigurationException("),
        exc="pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested "
            "GPUs: [0]\n But your machine only has: []"), "environment"),
    # FSDP told to wrap a block class the model lacks: the accelerate config
    (tb(USER, ("/env/lib/python3.10/site-packages/accelerate/utils/dataclasses.py",
               "set_auto_wrap_policy", "raise Exception("),
        exc="Exception: Could not find the transformer layer class to wrap in the model."),
     "config"),
    # a one-cycle schedule stepped past the steps it was built for: the run's settings
    (tb(USER, ("/env/lib/python3.8/site-packages/torch/optim/lr_scheduler.py", "get_lr",
               'raise ValueError("Tried to step {} times. The specified number of total steps '
               'is {}"'), exc="ValueError: Tried to step 100002 times. The specified number of "
                              "total steps is 100000"), "config"),
    # a resume pointed at a checkpoint folder that does not hold one
    (tb(USER, ("/env/lib/python3.10/site-packages/transformers/integrations/deepspeed.py",
               "deepspeed_load_checkpoint",
               'raise ValueError(f"[deepspeed] failed to resume from checkpoint '
               '{checkpoint_path}")'),
        exc="ValueError: [deepspeed] failed to resume from checkpoint /ckpt/run/checkpoint-5439"),
     "config"),
    # two ranks on one GPU: how the job was launched
    (tb(USER, exc="torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
                  "c10d/ProcessGroupNCCL.cpp:1275, internal error, NCCL version 2.14.3\n"
                  "ncclInternalError: Internal check failed.\nLast error:\nDuplicate GPU "
                  "detected : rank 5 and rank 0 both on CUDA device f5000"), "config"),
    # THC's device-side assert (cudaErrorAssert, 59) is a kernel's index check, no CUDA install
    (tb(USER, exc="RuntimeError: cuda runtime error (59) : device-side assert triggered at "
                  "/pytorch/aten/src/THC/generic/THCTensorMath.cu:24"), "data"),
    (tb(USER, exc="RuntimeError: cuda runtime error (35) : CUDA driver version is "
                  "insufficient for CUDA runtime version at torch/csrc/cuda/Module.cpp:51"),
     "environment"),
    # a version check that quotes the package (transformers' Trainer asking for accelerate)
    (tb(USER, ("/env/lib/python3.10/site-packages/transformers/training_args.py",
               "_setup_devices", "raise ImportError("),
        exc="ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=0.20.1`: "
            "Please run `pip install transformers[torch]` or `pip install accelerate -U`"),
     "environment"),
    (tb(USER, ("/env/lib/python3.10/site-packages/transformers/models/auto/"
               "configuration_auto.py", "from_pretrained", "raise ValueError("),
        exc="ValueError: The checkpoint you are trying to load has model type `qwen2` but "
            "Transformers does not recognize this architecture. This could be because of an "
            "issue with the checkpoint, or because your version of Transformers is out of "
            "date."), "environment"),
    # a compiler the run calls fails (torch.compile's C++ wrapper): the build tools
    (tb(USER, ("/usr/lib/python3.11/subprocess.py", "check_call",
               "raise CalledProcessError(retcode, process.args,"),
        exc="subprocess.CalledProcessError: Command '['g++', '/tmp/torchinductor_u/mc/x.cpp', "
            "'-shared', '-fPIC']' returned non-zero exit status 1."), "environment"),
    # a launched child that died of an access violation (Windows' 0xC0000005): a native crash
    (tb(USER, ("/venv/Lib/site-packages/accelerate/commands/launch.py", "simple_launcher",
               "raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)"),
        exc="subprocess.CalledProcessError: Command '['python.exe', 'train_network.py']' "
            "returned non-zero exit status 3221225477."), "environment"),
])
def test_root_from_where_it_was_raised(log: str, root: str) -> None:
    diagnosis = diagnose(log)
    assert diagnosis.root is not None and diagnosis.root.value == root, diagnosis.rule_id


def test_an_index_past_the_end_outside_label_code_stays_the_codes() -> None:
    log = tb(("train.py", "step", "x = buf[i + 1]"),
             exc="IndexError: index 64 is out of bounds for axis 0 with size 64")
    assert diagnose(log).root.value == "code"


def test_a_qualified_bare_error_class_is_the_exception_type() -> None:
    log = tb(USER, ("/venv/lib/python3.8/site-packages/gym/utils/passive_env_checker.py",
                    "env_step_passive_checker", "raise error.Error("),
             exc="gym.error.Error: Expected `Env.step` to return a four or five element tuple")
    assert diagnose(log).failure.exc_type == "gym.error.Error"
    assert diagnose("Error: could not open the file\n").failure is None


def test_a_config_name_elsewhere_in_the_traceback_does_not_make_a_keyerror_config() -> None:
    """`args.` and `cfg.` in an outer frame's code say nothing of the key that was missing."""
    log = tb(("train.py", "<module>", "train(cfg.num_epochs, trainer, args.log_dir)"),
             ("/srv/app/run_util/trainer.py", "compute_loss",
              "logits = output['traj_stateclass_logist']"),
             exc="KeyError: 'traj_stateclass_logist'")
    assert diagnose(log).root.value == "code"
    missing = tb(("train.py", "<module>", "main()"),
                 ("/srv/app/train.py", "main", "opt = build(cfg['optimizer'])"),
                 exc="KeyError: 'optimizer'")
    assert diagnose(missing).root.value == "config"


def test_a_worker_stopped_by_sigterm_is_neither_memory_nor_a_bad_sample() -> None:
    log = tb(USER, ("/env/lib/python3.8/site-packages/torch/utils/data/_utils/signal_handling.py",
                    "handler", "_error_if_any_worker_fails()"),
             exc="RuntimeError: DataLoader worker (pid 4020138) is killed by signal: Terminated.")
    diagnosis = diagnose(log)
    assert diagnosis.cause != "host_oom_dataloader" and diagnosis.root is None


def test_torchruns_newer_exitcode_line_is_a_kill_of_that_rank() -> None:
    log = ("step 2464 loss 0.083\n"
           "[2026-03-30 19:24:42,731] torch.distributed.elastic.multiprocessing.api: [ERROR] "
           "failed (exitcode: -9) for binary located at /env/bin/python3.10 with local_rank: 3 "
           "(process ID: 71)\n")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "host_oom" and diagnosis.failure.rank == 3


def test_a_grid_index_past_its_size_while_building_targets_is_the_annotations() -> None:
    log = tb(USER, ("PyTorch-YOLOv3/utils/utils.py", "build_targets",
                    "obj_mask[b, best_n, gj, gi] = 1"),
             exc="IndexError: index 3810 is out of bounds for dimension 2 with size 15")
    diagnosis = diagnose(log)
    assert diagnosis.rule_id == "MR-ROOT-107" and diagnosis.root.value == "data"
    elsewhere = tb(USER, ("PyTorch-YOLOv3/utils/utils.py", "rescale", "boxes[i] = box"),
                   exc="IndexError: index 3810 is out of bounds for dimension 2 with size 15")
    assert diagnose(elsewhere).rule_id != "MR-ROOT-107"


@pytest.mark.parametrize(("frame", "exc", "rule", "root"), [
    # a message naming the launch setting to use
    (("/env/lib/python3.10/site-packages/llamafactory/hparams/parser.py", "get_train_args",
      "raise ValueError("),
     "ValueError: Please use `FORCE_TORCHRUN=1` to launch DeepSpeed training.",
     "MR-ROOT-034", "config"),
    # a symlink the mounted output drive refuses: where the config points the output
    (("/usr/local/lib/python3.7/dist-packages/mmcv/utils/path.py", "symlink",
      "os.symlink(src, dst, **kwargs)"),
     "OSError: [Errno 95] Operation not supported: 'epoch_12.pth' -> "
     "'/content/drive/My Drive/mmdetection/latest.pth'", "MR-ROOT-109", "config"),
    # a console that cannot encode the output: the machine's locale
    (("C:\\conda\\lib\\encodings\\cp1252.py", "encode",
      "return codecs.charmap_encode(input,self.errors,encoding_table)[0]"),
     "UnicodeEncodeError: 'charmap' codec can't encode character '\\u2588' in position 12: "
     "character maps to <undefined>", "MR-ROOT-108", "environment"),
    # ... its message wrapped by a narrow console
    (("C:\\conda\\lib\\encodings\\cp1252.py", "encode",
      "return codecs.charmap_encode(input,self.errors,encoding_table)[0]"),
     "UnicodeEncodeError: 'charmap' codec can't\nencode character\n'\\u2705' in position\n2: "
     "character maps to\n<undefined>", "MR-ROOT-108", "environment"),
    # torchrun's agent hung up on with its terminal (whole nohup.out logs of three repos)
    (("/env/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/api.py",
      "_terminate_process_handler", "raise SignalException(f\"Process {os.getpid()} got "
      "signal: {sigval}\", sigval=sigval)"),
     "torch.distributed.elastic.multiprocessing.api.SignalException: Process 12152 got "
     "signal: 1", "MR-ROOT-110", "config"),
    # a config library looking up a key the config file lacks (mmaction2's data_prefix)
    (("/env/lib/python3.8/site-packages/mmengine/config/config.py", "__missing__",
      "raise KeyError(name)"), "KeyError: 'img'", "MR-ROOT-117", "config"),
    (("/env/lib/python3.8/site-packages/mmcv/utils/config.py", "__getattr__",
      "raise ex"), "AttributeError: 'ConfigDict' object has no attribute 'pretrained'",
     "MR-ROOT-117", "config"),
    # torch.save's zip writer on a full disk (w44: the next start fails on the cut checkpoint)
    (("/env/lib/python3.11/site-packages/torch/serialization.py", "_save",
      "zip_file.write_record(name, storage, num_bytes)"),
     "RuntimeError: basic_ios::clear: iostream error", "MR-ROOT-013", "environment"),
    (("/env/lib/python3.11/site-packages/torch/serialization.py", "__exit__",
      "self.file_like.write_end_of_file()"),
     "RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 2351234560 vs "
     "2351234448", "MR-ROOT-013", "environment"),
])
def test_root_rules_of_the_settings_and_the_machine(frame: tuple[str, str, str], exc: str,
                                                     rule: str, root: str) -> None:
    diagnosis = diagnose(tb(USER, frame, exc=exc))
    assert (diagnosis.rule_id, diagnosis.root.value) == (rule, root)


def test_a_rank_torchrun_reports_killed_by_sigsegv_is_a_native_crash() -> None:
    log = ("torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -11) "
           "local_rank: 0 (pid: 4242) of binary: /env/bin/python\n")
    diagnosis = diagnose(log)
    assert diagnosis.rule_id == "MR-ROOT-009" and diagnosis.root.value == "environment"
    deepspeed = ("[ERROR] [launch.py:321:sigkill_handler] ['/env/bin/python', '-u', 'train.py', "
                 "'--local_rank=0'] exits with return code = -11\n")
    assert diagnose(deepspeed).rule_id == "MR-ROOT-009"


@pytest.mark.parametrize(("path", "package"), [
    (r"d:\segmentation\detectron2-0.3\detectron2\config\config.py", "detectron2"),
    ("/opt/fairseq-0.12.2/fairseq/trainer.py", "fairseq"),
    ("/home/u/proj-main/proj/train.py", None),  # a checkout of one's own project
    ("/home/u/exp-2.1/train.py", None),
])
def test_an_unpacked_release_tree_is_a_library(path: str, package: str | None) -> None:
    assert package_of(path) == package


@pytest.mark.parametrize(("log", "root"), [
    ('RuntimeError: Error(s) in loading state_dict for ResNet:\n'
     '\tMissing key(s) in state_dict: "conv1.weight", "bn1.weight".\n'
     '\tUnexpected key(s) in state_dict: "module.conv1.weight", "module.bn1.weight".\n', "code"),
    ("RuntimeError: Error(s) in loading state_dict for ResNet:\n"
     "\tsize mismatch for fc.weight: copying a param with shape torch.Size([1000, 2048]) from "
     "checkpoint, the shape in current model is torch.Size([10, 2048]).\n", "config"),
    ("PIL.UnidentifiedImageError: Caught UnidentifiedImageError in DataLoader worker process 0.\n"
     "PIL.UnidentifiedImageError: cannot identify image file 'img/0042.jpg'\n", "data"),
    ("FileNotFoundError: Caught FileNotFoundError in DataLoader worker process 3.\n"
     "FileNotFoundError: [Errno 2] No such file or directory: '/data/voc/0042.jpg'\n", "config"),
    ("ValueError: Expected input batch_size (511) to match target batch_size (23).\n", "code"),
])
def test_a_causes_root_follows_the_variant_the_evidence_shows(log: str, root: str) -> None:
    """A wrapper's `module.` prefix is the code's save/load; a head of another size the
    config's; a sample that cannot be read is the data's, a file the list names that is not
    there the data path's (the rules' variant_roots)."""
    diagnosis = diagnose(log)
    assert diagnosis.root is not None and diagnosis.root.value == root


def test_variant_roots_must_name_a_variant_of_the_rule(tmp_path) -> None:  # noqa: ANN001
    from minrepro.diagnose.rules.registry import load_rules
    from minrepro.errors import RulePackError
    from tests.test_registry import NEW_CAUSE_RULE

    pack = tmp_path / "tok.yaml"
    pack.write_text(NEW_CAUSE_RULE.replace("signals:", "variant_roots:\n  nope: code\nsignals:"))
    with pytest.raises(RulePackError, match="variant_roots.nope: no signal of this rule"):
        load_rules([pack])


def test_variant_fixes_must_name_a_variant_of_the_rule(tmp_path) -> None:  # noqa: ANN001
    from minrepro.diagnose.rules.registry import load_rules
    from minrepro.errors import RulePackError
    from tests.test_registry import NEW_CAUSE_RULE

    pack = tmp_path / "tok.yaml"
    pack.write_text(NEW_CAUSE_RULE.replace("signals:", "variant_fixes:\n  nope: x\nsignals:"))
    with pytest.raises(RulePackError, match="variant_fixes.nope: no signal of this rule"):
        load_rules([pack])


def test_a_launchers_local_rank_is_a_version_break_with_its_own_fix() -> None:
    """torch >= 2.0's launchers pass --local-rank; the fix is in the script's arguments (the
    variant's fix), not the rule's version pin; `--local_rank` refused is no version break."""
    log = ("usage: train.py [-h] [--local_rank LOCAL_RANK]\n"
           "train.py: error: unrecognized arguments: --local-rank=0\n")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "version_incompatibility" and diagnosis.variant == "local_rank"
    assert '"--local-rank", "--local_rank"' in diagnosis.fix and "pip install" not in diagnosis.fix
    other = diagnose(log.replace("--local-rank=0", "--local_rank=0"))
    assert other.cause is None and other.root.value == "config"


@pytest.mark.parametrize("log", [
    tb(USER, exc="RuntimeError: CUDA error: an illegal memory access was encountered"),
    tb(USER, exc="RuntimeError: NCCL communicator was aborted."),
    tb(("/srv/app/train.py", "train", "out = model(batch.to(device))"),
       ("/env/lib/python3.8/site-packages/transformers/trainer.py", "train", "x = cfg.lr"),
       exc="AttributeError: 'NoneType' object has no attribute 'shape'"),  # not a setting read
    tb(USER, ("/env/lib/python3.8/site-packages/transformers/trainer.py", "train",
              "return self._data[key]"), exc="KeyError: 'labels'"),  # not a data-format library
])
def test_evidence_that_does_not_decide_leaves_the_root_to_other_rules(log: str) -> None:
    diagnosis = diagnose(log)
    assert diagnosis.rule_id not in ("MR-ROOT-057", "MR-ROOT-059", "MR-ROOT-061"), diagnosis.rule_id


def test_an_undecided_failure_takes_the_root_of_the_exception_chained_to_it() -> None:
    """A KeyError inside a library decides nothing; the ConfigurationError raised while
    handling it says what it meant (a config key the file lacks)."""
    params = ("/env/lib/python3.7/site-packages/allennlp/common/params.py", "pop",
              "value = self.params.pop(key)")
    log = (tb(params, exc="KeyError: 'train_data_path'")
           + "\nDuring handling of the above exception, another exception occurred:\n\n"
           + tb(params, exc='allennlp.common.checks.ConfigurationError: key "train_data_path" '
                            "is required"))
    diagnosis = diagnose(log)
    assert diagnosis.failure.exc_type == "KeyError"
    assert diagnosis.root.value == "config" and diagnosis.rule_id == "MR-ROOT-031"
    alone = diagnose(tb(params, exc="KeyError: 'train_data_path'"))
    assert alone.root is None  # the KeyError alone still decides nothing


@pytest.mark.parametrize(("report", "root"), [
    # 8 GiB of the card neither free nor reserved by this process: another process has it
    ("(GPU 0; 10.76 GiB total capacity; 2.29 GiB already allocated; 119.31 MiB free; 2.39 GiB "
     "reserved in total by PyTorch)", "environment"),
    # the process's own working set fills the card
    ("(GPU 0; 10.76 GiB total capacity; 9.80 GiB already allocated; 119.31 MiB free; 10.10 GiB "
     "reserved in total by PyTorch)", "config"),
    # a container lists the process itself as "Process N": its own numbers fill the card
    (". GPU 0 has a total capacty of 15.89 GiB of which 65.12 MiB is free. Process 2670 has "
     "15.82 GiB memory in use. Of the allocated memory 15.36 GiB is allocated by PyTorch, and "
     "168.02 MiB is reserved by PyTorch but unallocated.", "config"),
    # ... while two other processes holding 19 of 24 GiB is another's
    (". GPU 1 has a total capacty of 23.64 GiB of which 45.69 MiB is free. Process 3523280 has "
     "13.38 GiB memory in use. Process 3531848 has 5.88 GiB memory in use. Including non-PyTorch "
     "memory, this process has 4.32 GiB memory in use. Of the allocated memory 3.91 GiB is "
     "allocated by PyTorch, and 10.46 MiB is reserved by PyTorch but unallocated.",
     "environment"),
])
def test_a_cuda_oom_with_the_card_held_elsewhere_is_the_environments(report: str,
                                                                      root: str) -> None:
    log = f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 MiB {report}\n"
    diagnosis = diagnose(log)
    assert diagnosis.cause == "cuda_oom" and diagnosis.root.value == root


@pytest.mark.parametrize(("log", "rule", "root"), [
    # PyTorch's assert that it found the driver's libcuda: the machine, not a PyTorch bug
    (tb(USER, ("/env/lib/python3.10/site-packages/torch/nn/functional.py", "linear",
               "return torch._C._nn.linear(input, weight, bias)"),
        exc='RuntimeError: handle_0 INTERNAL ASSERT FAILED at "../c10/cuda/driver_api.cpp":15, '
            'please report a bug to PyTorch.'), "MR-ROOT-111", "environment"),
    # a Hub model's remote code referring to a name it never defined: that code's bug
    (tb(USER, ("/home/u/.cache/huggingface/modules/transformers_modules/chatglm-6b/"
               "tokenization_chatglm.py", "save_vocabulary",
               'save_directory, VOCAB_FILES_NAMES["vocab_file"]'),
        exc="NameError: name 'VOCAB_FILES_NAMES' is not defined"), "MR-ROOT-147", "framework"),
    # an installed library's guarded import of an optional package that is not installed
    (tb(USER, ("/usr/local/lib/python3.10/dist-packages/trl/trainer/utils.py",
               "get_peft_config", "peft_config = LoraConfig("),
        exc="NameError: name 'LoraConfig' is not defined. Did you mean: 'ModelConfig'?"),
     "MR-ROOT-146", "environment"),
    # a local the library's own code path never set: the library's bug
    (tb(USER, ("/env/lib/python3.11/site-packages/lib/trainer.py", "step",
               "return outputs"),
        exc="UnboundLocalError: cannot access local variable 'outputs' where it is not "
            "associated with a value"), "MR-ROOT-085", "framework"),
    # the code's own check that it runs under a distributed launcher
    (tb(USER, ("../utils.py", "__init__", "assert dist.is_initialized()"),
        exc="AssertionError"), "MR-ROOT-047", "config"),
    # accelerate's check that every process hands a collective the same shapes
    (tb(USER, ("/env/lib/python3.12/site-packages/accelerate/utils/operations.py", "wrapper",
               "raise DistributedOperationException("),
        exc="accelerate.utils.operations.DistributedOperationException: Cannot apply desired "
            "operation due to shape mismatches. All shapes across devices must be valid."),
     "MR-ROOT-112", "code"),
    # a model name timm does not know
    (tb(USER, ("/env/lib/python3.12/site-packages/timm/models/_factory.py", "create_model",
               "raise RuntimeError('Unknown model (%s)' % model_name)"),
        exc="RuntimeError: Unknown model (vit)"), "MR-ROOT-113", "config"),
])
def test_root_rules_of_round_c46_c47_w43(log: str, rule: str, root: str) -> None:
    diagnosis = diagnose(log)
    assert (diagnosis.rule_id, diagnosis.root.value) == (rule, root)


@pytest.mark.parametrize(("log", "rule", "root"), [
    # a pytorch_lightning model handed to lightning.pytorch's Trainer (or the reverse)
    (tb(USER, ("/env/lib/python3.9/site-packages/lightning/pytorch/utilities/compile.py",
               "_maybe_unwrap_optimized", "raise TypeError("),
        exc="TypeError: `model` must be a `LightningModule` or `torch._dynamo.OptimizedModule`, "
            "got `TemporalFusionTransformer`"), "MR-ROOT-119", "environment"),
    (tb(USER, exc="TypeError: `model` must be a `LightningModule`, got `Net`"),
     "MR-ROOT-119", "environment"),
    # bf16 asked of a V100
    (tb(USER, ("/env/lib/python3.10/site-packages/transformers/training_args.py",
               "__post_init__", "raise ValueError("),
        exc="ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using "
            "Ampere GPU with cuda>=11.0"), "MR-ROOT-120", "config"),
    # a DataLoader worker spawned from a script without a __main__ guard
    ("Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
     "RuntimeError: \n        An attempt has been made to start a new process before the\n"
     "        current process has finished its bootstrapping phase.\n", "MR-ROOT-121", "code"),
    # SDPA limited to the flash kernel where it cannot run
    (tb(USER, ("/srv/megabyte/attend.py", "flash_attn", "out = F.scaled_dot_product_attention("),
        exc="RuntimeError: No available kernel.  Aborting execution."), "MR-ROOT-122", "config"),
    # the hub's offline mode with a model the cache does not hold
    (tb(USER, ("/env/lib/python3.11/site-packages/huggingface_hub/file_download.py",
               "_raise_on_head_call_error", "raise LocalEntryNotFoundError("),
        exc="huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in "
            "the disk cache and outgoing traffic has been disabled. To enable hf.co look-ups "
            "and downloads online, set 'local_files_only' to False."), "MR-ROOT-123", "config"),
    # torch.compile's backend failing on the model, nothing of the environment said
    (tb(USER, ("/env/lib/python3.10/site-packages/torch/_dynamo/output_graph.py",
               "call_user_compiler", "raise BackendCompilerFailed(self.compiler_fn, e) from e"),
        exc="torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
            "AssertionError: a FakeTensor was expected"), "MR-ROOT-124", "framework"),
    # a division by the length of a loader that gave nothing: the data or its path
    (tb(("/srv/app/utils.py", "log_every", "header, total_time_str, total_time / len(iterable)))"),
        exc="ZeroDivisionError: float division by zero"), "MR-ROOT-125", "config"),
    (tb(("/srv/app/train.py", "train_model", "epoch_loss = metrics['loss'] / epoch_samples"),
        exc="ZeroDivisionError: float division by zero"), "MR-ROOT-125", "config"),
    # ... but a formula of the code's own is the code's
    (tb(("/srv/app/loss.py", "forward", "weights = (1.0 / (K - 1)) * (1.0 - p)"),
        exc="ZeroDivisionError: float division by zero"), "MR-ROOT-040", "code"),
])
def test_root_rules_of_rounds_c51_to_c54(log: str, rule: str, root: str) -> None:
    diagnosis = diagnose(log)
    assert (diagnosis.rule_id, diagnosis.root.value) == (rule, root)


def test_a_name_error_in_the_users_own_code_stays_code() -> None:
    diagnosis = diagnose(tb(USER, exc="NameError: name 'trainer' is not defined"))
    assert diagnosis.root.value == "code"


@pytest.mark.parametrize(("path", "package"), [
    ("/root/.cache/huggingface/modules/transformers_modules/Qwen-VL-Chat/modeling_qwen.py",
     "transformers_modules"),
    ("C:\\Users\\u\\.cache\\torch\\hub\\facebookresearch_dinov2_main\\dinov2\\block.py",
     "torch.hub"),
    ("/home/u/hub/train.py", None),
    # code a library compiles into the working directory, or execs from a string
    ("/content/unsloth_compiled_cache/UnslothGRPOTrainer.py", "unsloth"),
    ("<string>", "<string>"),
    ("<ipython-input-3-1a2b>", None),  # a notebook cell is the user's
])
def test_code_a_library_downloads_is_a_library(path: str, package: str | None) -> None:
    assert package_of(path) == package


def test_an_unspecified_launch_failure_after_training_is_the_card() -> None:
    """The same kernels ran for many steps, then one failed to launch: the hardware; at the
    first step, nothing says so (a kernel's own bug fails there too)."""
    crash = tb(USER, exc="RuntimeError: CUDA error: unspecified launch failure")
    trained = "".join(f"epoch 3 step {i} loss {2.0 - i / 100:.4f}\n" for i in range(40))
    late = diagnose(trained + crash)
    assert (late.rule_id, late.root.value) == ("MR-ROOT-115", "hardware")
    assert diagnose(crash).rule_id != "MR-ROOT-115"


@pytest.mark.parametrize(("frames", "exc", "param"), [
    # a keyword the installed release does not take, raised at the user's call (w44, c49)
    ((("/srv/app/models/unet.py", "__init__", "self.decoder = smp.decoders.UnetDecoder("),),
     "TypeError: UnetDecoder.__init__() got an unexpected keyword argument 'center'",
     ("keyword", "center")),
    # a module attribute moved in the installed release, read at the user's import
    ((("/srv/app/models/backbone.py", "<module>",
       "class SparseBasicBlock(spconv.SparseModule):"),),
     "AttributeError: module 'spconv' has no attribute 'SparseModule'", ("symbol", "SparseModule")),
])
def test_a_version_rules_placement_corroborates_a_weak_version_finding(
        frames: tuple[tuple[str, str, str], ...], exc: str, param: tuple[str, str]) -> None:
    """Alone the message is too weak to name the cause (a user's own class refuses keywords
    too); the version root rule reading the same exception line names it."""
    diagnosis = diagnose(tb(*frames, exc=exc))
    assert diagnosis.cause == "version_incompatibility" and diagnosis.root.value == "environment"
    assert diagnosis.params[param[0]] == param[1] and diagnosis.rule_id == "MR-ENV-003"
    assert 0.5 <= diagnosis.confidence < 0.8


@pytest.mark.parametrize("code", ["model = ResNetHead(dropout=0.1)",
                                  "self.mamba = Mamba(d_model, bimamba=True)",
                                  "head = self.ResNetHead(dropout=0.1)"])
def test_a_keyword_refused_by_a_class_not_called_through_a_module_is_no_version_break(
        code: str) -> None:
    """A bare name may be the repo's own class: the placement stays environment's guess
    (MR-ROOT-018) without naming the cause."""
    name = "Mamba" if "Mamba" in code else "ResNetHead"
    diagnosis = diagnose(tb(("/srv/app/train.py", "<module>", code),
                            exc=f"TypeError: {name}.__init__() got an unexpected keyword argument"
                                " 'dropout'"))
    assert diagnosis.cause is None and diagnosis.rule_id == "MR-ROOT-018"


def test_a_weak_version_sign_away_from_the_failure_is_not_corroborated() -> None:
    """The version rule matches the first failure; a version message elsewhere (a warning
    earlier in the log) is not that failure's reading, and adds nothing to it."""
    log = ("WARNING: module 'torchvision' has no attribute 'datapoints' (ignored)\n"
           + "epoch 1 loss 2.3\n" * 5
           + tb(("/srv/app/train.py", "train", "batch = next(it)"),
                exc="TypeError: Mamba.__init__() got an unexpected keyword argument 'bimamba'")
           .replace("Mamba.__init__() got an unexpected keyword argument 'bimamba'",
                    "'NoneType' object is not iterable"))
    assert diagnose(log).cause is None


@pytest.mark.parametrize(("code", "root", "rule"), [
    # the author's check of the data: two lists of one length, a tensor free of NaN
    ("assert len(gold_label_list) == len(pred_label_list)", "data", "MR-ROOT-116"),
    ("assert (rpn_bbox_pred == rpn_bbox_pred).all()", "data", "MR-ROOT-116"),
    ("assert num_mutants == len(merge), 'Some mutants were dropped'", "data", "MR-ROOT-116"),
    # ... of a setting: the settings' rule
    ("assert args.batch_size % args.world_size == 0", "config", "MR-ROOT-034"),
    # ... of two settings that must go together, said in the message
    ("assert self.queue_size % b == 0, 'queue size should be divisible by batch size'",
     "config", "MR-ROOT-034"),
    # ... of its own values: the code's
    ("assert N == self.num_patches", "code", "MR-ROOT-040"),
    # ... of a setting the message says must be given
    ("assert normal_dir is not None, 'A folder location must be provided in normal_dir.'",
     "config", "MR-ROOT-034"),
    # ... of the class count set against the class names: the settings'
    ("assert num_classes == len(classnames) and num_classes == len(palette)", "config",
     "MR-ROOT-034"),
    # ... but the labels against the class count: the data's
    ("assert labels.max() < num_classes", "data", "MR-ROOT-116"),
    # ... that a path it was given exists: the path's
    ("assert os.path.exists(self.path2)", "config", "MR-ROOT-155"),
    ("assert Path(cfg.data_root).is_dir(), cfg.data_root", "config", "MR-ROOT-155"),
    ("assert ckpt_file.exists()", "config", "MR-ROOT-155"),
])
def test_an_assert_of_the_training_code_is_its_check_of_what_it_was_given(
        code: str, root: str, rule: str) -> None:
    diagnosis = diagnose(tb(("/srv/app/train.py", "train", code), exc="AssertionError"))
    assert (diagnosis.rule_id, diagnosis.root.value) == (rule, root)


def test_an_assert_in_a_library_is_not_the_users_check() -> None:
    lib = ("/env/lib/python3.10/site-packages/mmcv/ops/nms.py", "nms",
           "assert boxes.size(1) == 4")
    diagnosis = diagnose(tb(("/srv/app/train.py", "train", "keep = nms(boxes, scores)"), lib,
                            exc="AssertionError"))
    assert diagnosis.rule_id != "MR-ROOT-116"


TRAINER = ("/env/lib/python3.10/site-packages/transformers/trainer.py", "_inner_training_loop",
           "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)")


@pytest.mark.parametrize("log", [
    # a Trainer hook overridden with the signature of an older release
    tb(USER, TRAINER, exc="TypeError: CustomTrainer.training_step() takes 3 positional "
                          "arguments but 4 were given"),
    # one library reading an attribute another installed library's version lacks
    tb(USER, ("/env/lib/python3.10/site-packages/peft/tuners/lora/bnb.py", "merge",
              "weight = self.get_base_layer().weight.CB"),
       exc="AttributeError: 'Int8Params' object has no attribute 'CB'"),
    # the installed exporter older than the opset the script asks for
    tb(USER, ("/env/lib/python3.10/site-packages/torch/onnx/symbolic_helper.py",
              "_set_opset_version", 'raise ValueError("Unsupported ONNX opset version: " + '
                                    'str(opset_version))'),
       exc="ValueError: Unsupported ONNX opset version: 16"),
])
def test_a_version_rules_placement_alone_names_the_cause(log: str) -> None:
    """No signal of the version rule on the lines, but the root rule that places the failure
    is a version rule's: the cause is named, modestly, and credited to the version rule."""
    diagnosis = diagnose(log)
    assert (diagnosis.cause, diagnosis.root.value) == ("version_incompatibility", "environment")
    assert diagnosis.rule_id == "MR-ENV-003" and diagnosis.confidence == 0.55
    assert [e.line for e in diagnosis.evidence] == [log.count("\n")]


def test_a_signature_the_users_own_call_gets_wrong_names_no_cause() -> None:
    """The same TypeError raised at the user's own call is the code's: no version cause."""
    diagnosis = diagnose(tb(USER, exc="TypeError: run_epoch() missing 1 required positional "
                                      "argument: 'epoch'"))
    assert diagnosis.cause is None and diagnosis.root.value == "code"


@pytest.mark.parametrize(("log", "rule", "root"), [
    # resuming an optimizer whose checkpoint was written for other parameters
    (tb(USER, ("/env/lib/python3.7/site-packages/torch/optim/optimizer.py", "load_state_dict",
               'raise ValueError("loaded state dict contains a parameter group "'),
        exc="ValueError: loaded state dict contains a parameter group that doesn't match the "
            "size of optimizer's group"), "MR-ROOT-128", "config"),
    # safetensors refusing a tied lm_head
    (tb(USER, ("/env/lib/python3.12/site-packages/accelerate/accelerator.py", "save_state",
               "save_model(model, output_dir)"),
        exc="RuntimeError: \n            Some tensors share memory, this will lead to duplicate "
            "memory on disk and potential differences when loading them again: "
            "[{'lm_head.weight', 'transformer.wte.weight'}]."), "MR-ROOT-127", "code"),
    # LoRA target modules written for another architecture
    (tb(USER, ("/env/lib/python3.11/site-packages/peft/tuners/tuners_utils.py", "inject_adapter",
               "raise ValueError("),
        exc="ValueError: Target modules model.layers.[\\d]+.(mlp|self_attn).(q|k|v)_proj not "
            "found in the base model. Please check the target modules and try again."),
     "MR-ROOT-129", "config"),
    # a prompt longer than the configured max length (verl), raised in the repo's own code
    (tb(USER, ("/srv/verl/utils/torch_functional.py", "tokenize_and_postprocess_data",
               "raise NotImplementedError(f'{sequence_length=} is larger than {max_length=}')"),
        exc="NotImplementedError: sequence_length=888 is larger than max_length=768"),
     "MR-ROOT-130", "config"),
    # a scheduler resumed on an optimizer whose state was not loaded
    (tb(USER, ("/env/lib/python3.8/site-packages/torch/optim/lr_scheduler.py", "__init__",
               "raise KeyError(\"param 'initial_lr' is not specified \""),
        exc="KeyError: \"param 'initial_lr' is not specified in param_groups[0] when resuming "
            "an optimizer\""), "MR-ROOT-131", "config"),
])
def test_root_rules_of_rounds_d10_c56_c57(log: str, rule: str, root: str) -> None:
    diagnosis = diagnose(log)
    assert (diagnosis.rule_id, diagnosis.root.value) == (rule, root)


def test_an_empty_list_of_lora_targets_is_what_the_code_found_not_a_setting() -> None:
    """`Target modules [] not found`: the code's own module discovery returned nothing."""
    diagnosis = diagnose(tb(USER, ("/env/lib/python3.10/site-packages/peft/tuners/tuners_utils.py",
                                   "inject_adapter", "raise ValueError("),
                            exc="ValueError: Target modules [] not found in the base model. "
                                "Please check the target modules and try again."))
    assert diagnosis.rule_id != "MR-ROOT-129"


def test_an_element_wise_size_mismatch_is_a_shape_mismatch_of_the_settings() -> None:
    """Two tensors of an element-wise op that differ in one dimension (a loss's output and
    target): shape_mismatch, named modestly; its root the cause's own (config: the labelled
    rounds gave config 5 times, code 3 times, data once)."""
    diagnosis = diagnose("RuntimeError: The size of tensor a (10) must match the size of tensor "
                         "b (2) at non-singleton dimension 1\n")
    assert (diagnosis.cause, diagnosis.variant, diagnosis.root.value) == \
        ("shape_mismatch", "broadcast", "config")
    assert diagnosis.params["actual"] == 10 and diagnosis.params["expected"] == 2
    assert diagnosis.confidence < 0.6


def test_an_extension_built_against_another_torch_is_a_version_break_not_cuda() -> None:
    """A c10 symbol a compiled extension cannot find: the torch it was built against."""
    diagnosis = diagnose(tb(
        USER, ("/env/lib/python3.10/site-packages/flash_attn/flash_attn_interface.py", "<module>",
               "import flash_attn_2_cuda as flash_attn_cuda"),
        exc="ImportError: /env/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
            "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"))
    assert (diagnosis.cause, diagnosis.root.value) == ("version_incompatibility", "environment")
    assert diagnosis.confidence > 0.6


@pytest.mark.parametrize(("code", "rule"), [
    ("if isinstance(self.data_paths[0], tuple):", "MR-ROOT-133"),
    ("ckpt = sorted(glob.glob(os.path.join(args.ckpt_dir, '*.pth')))[-1]", "MR-ROOT-133"),
    ("first = os.listdir(root)[0]", "MR-ROOT-133"),
    # an index into the code's own values is the code's
    ("token = tokens[i + 1]", None),
])
def test_the_first_of_an_empty_file_list_is_a_path_that_matched_nothing(
        code: str, rule: str | None) -> None:
    diagnosis = diagnose(tb(("/srv/app/data/dataset.py", "__init__", code),
                            exc="IndexError: list index out of range"))
    if rule:
        assert diagnosis.rule_id == rule and diagnosis.root.value == "config"
    else:
        assert diagnosis.rule_id != "MR-ROOT-133" and diagnosis.root.value == "code"


def test_a_config_delete_directive_handed_to_its_class_is_the_configs() -> None:
    """`_delete_=True` in an mmcv config that inherits nothing reaches the optimizer's
    constructor: no installed version refuses it, the config does."""
    diagnosis = diagnose(tb(
        ("/opt/conda/lib/python3.10/site-packages/mmcv/utils/registry.py", "build_from_cfg",
         "return obj_cls(**args)"),
        exc="TypeError: AdamW.__init__() got an unexpected keyword argument '_delete_'"))
    assert diagnosis.cause is None and diagnosis.rule_id == "MR-ROOT-134"
    assert diagnosis.root.value == "config"


@pytest.mark.parametrize(("exc", "rule", "root"), [
    # a repo's own script module (an installed package `val` shadowing the repo's val.py)
    ("AttributeError: module 'val' has no attribute 'run'", "MR-ROOT-135", "code"),
    ("AttributeError: module 'models.resnet' has no attribute 'ResNet18'", "MR-ROOT-135",
     "code"),
    # an installed library's module: its release
    ("AttributeError: module 'numpy' has no attribute 'float'", None, "environment"),
])
def test_a_repo_modules_missing_attribute_is_the_code(exc: str, rule: str | None,
                                                      root: str) -> None:
    diagnosis = diagnose(tb(("/srv/app/train.py", "train", "results = val.run(data)"), exc=exc))
    assert diagnosis.root.value == root
    if rule:
        assert diagnosis.cause is None and diagnosis.rule_id == rule


_CALL_IMPL = ("/env/lib/python3.8/site-packages/torch/nn/modules/module.py", "_call_impl",
              "return forward_call(*args, **kwargs)")
_WRAPPED = ("/env/lib/python3.8/site-packages/torch/nn/modules/module.py", "_wrapped_call_impl",
            "return self._call_impl(*args, **kwargs)")
_TRAINER = ("/env/lib/python3.10/site-packages/transformers/trainer.py", "compute_loss",
            "outputs = model(**inputs)")


@pytest.mark.parametrize(("caller", "rule", "root"), [
    # the training code calls its model with a keyword the model's forward() does not take
    (("/srv/app/train.py", "train", "out = model(x, modality_mapping=mapping)"), "MR-ROOT-136",
     "code"),
    # a library's Trainer passing the keyword: the library's release and the model disagree
    # (the version cause is named: the keyword, beside the library's frame)
    (_TRAINER, "MR-ENV-003", "environment"),
])
def test_a_keyword_the_models_forward_refuses_is_the_callers(
        caller: tuple[str, str, str], rule: str, root: str) -> None:
    diagnosis = diagnose(tb(USER, caller, _WRAPPED, _CALL_IMPL,
                            exc="TypeError: forward() got an unexpected keyword argument "
                                "'modality_mapping'"))
    assert (diagnosis.rule_id, diagnosis.root.value) == (rule, root)


@pytest.mark.parametrize(("code", "rule", "root"), [
    # a helper of the repo's own misc/utils module called with a keyword it does not take
    ("misc.save_model(", "MR-ROOT-138", "code"),
    ("utils.save_checkpoint(state, is_best=True)", "MR-ROOT-138", "code"),
    # a library's module (torch.utils is torch's, not the repo's utils): MR-ROOT-118's
    # placement corroborates the version cause
    ("loader = torch.utils.save_checkpoint(state, is_best=True)", "MR-ENV-003",
     "environment"),
])
def test_a_keyword_refused_by_the_repos_own_helper_is_the_code(code: str, rule: str,
                                                               root: str) -> None:
    name = "save_model" if "save_model" in code else "save_checkpoint"
    diagnosis = diagnose(tb(("/srv/app/main_train.py", "main", code),
                            exc=f"TypeError: {name}() got an unexpected keyword argument "
                                "'is_best'"))
    assert (diagnosis.rule_id, diagnosis.root.value) == (rule, root)


def test_observed_values_outside_a_distributions_support_are_the_data() -> None:
    diagnosis = diagnose(tb(
        USER, ("/env/lib/python3.10/site-packages/torch/distributions/distribution.py",
               "_validate_sample", "raise ValueError("),
        exc="ValueError: Expected value argument (Tensor of shape (1000, 3000, 2)) to be within "
            "the support (IntegerGreaterThan(lower_bound=0)) of the distribution GammaPoisson(), "
            "but found invalid values:"))
    assert (diagnosis.rule_id, diagnosis.root.value) == ("MR-ROOT-137", "data")


def test_torchruns_own_frames_are_no_library_call_beside_a_refused_keyword() -> None:
    """A keyword refused in the repo's code, then torchrun's report of the failed child: the
    launcher's frames under site-packages/torch/distributed do not make it a library's."""
    log = "[rank1]: " + tb(("/srv/app/main_train.py", "main", "save_model("),
                           exc="TypeError: save_model() got an unexpected keyword argument "
                               "'is_best'").replace("\n", "\n[rank1]: ").rstrip("[rank1]: ")
    launcher = tb(("/env/lib/python3.10/site-packages/torch/distributed/run.py", "main",
                   "run(args)"),
                  ("/env/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/"
                   "errors/__init__.py", "wrapper", "return f(*args, **kwargs)"),
                  ("/env/lib/python3.10/site-packages/torch/distributed/launcher/api.py",
                   "launch_agent", "raise ChildFailedError("),
                  exc="torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ")
    diagnosis = diagnose(log + launcher)
    assert diagnosis.cause is None


def test_a_key_hydras_target_refuses_is_the_configs() -> None:
    from tests.test_extract_traceback import HYDRA
    diagnosis = diagnose("epoch 19 loss 0.31\n" + HYDRA)
    assert diagnosis.cause is None and diagnosis.failure.exc_type == "TypeError"
    assert (diagnosis.rule_id, diagnosis.root.value) == ("MR-ROOT-140", "config")


@pytest.mark.parametrize("module", ["data", "data.loading", "networks", "dataset"])
def test_a_repo_package_not_found_is_no_missing_install(module: str) -> None:
    diagnosis = diagnose(tb(("/srv/app/training/train.py", "<module>",
                             "from data.loading import load_datasets"),
                            exc=f"ModuleNotFoundError: No module named '{module}'"))
    assert diagnosis.cause is None
    assert (diagnosis.rule_id, diagnosis.root.value) == ("MR-ROOT-017", "config")


def test_a_trainer_subclass_hook_refusing_the_installed_releases_keyword_is_a_version_break(
        ) -> None:
    diagnosis = diagnose("TypeError: Phi3VTrainer._save_checkpoint() got an unexpected keyword "
                         "argument 'metrics'\n")
    assert diagnosis.cause == "version_incompatibility"
    assert diagnosis.root.value == "environment"


@pytest.mark.parametrize(("log", "cause", "variant"), [
    # several cards visible to a plain python launch: the launch, not the model's code
    ("CUDA_VISIBLE_DEVICES=0,1,2,3 python src/train_bash.py --fp16\n"
     + tb(("/env/lib/python3.10/site-packages/peft/tuners/lora.py", "forward",
           "result = F.linear(x, transpose(self.weight, self.fan_in_fan_out), bias=self.bias)"),
          exc="RuntimeError: expected scalar type Float but found Half"),
     "dtype_mismatch", "several_cards_plain_launch"),
    # two GPUs in one op: the model spread over the cards
    (tb(USER, exc="RuntimeError: Expected all tensors to be on the same device, but found at "
                  "least two devices, cuda:2 and cuda:0!"), "device_mismatch", "across_cards"),
])
def test_mixed_devices_or_dtypes_from_a_multi_card_launch_are_the_configs(
        log: str, cause: str, variant: str) -> None:
    diagnosis = diagnose(log)
    assert (diagnosis.cause, diagnosis.variant, diagnosis.root.value) == (cause, variant,
                                                                          "config")
    assert "CUDA_VISIBLE_DEVICES=0" in diagnosis.fix


@pytest.mark.parametrize("log", [
    # one card, or a launcher per card: the usual root (the code)
    "CUDA_VISIBLE_DEVICES=0 python train.py\n" + tb(
        USER, exc="RuntimeError: expected scalar type Float but found Half"),
    tb(USER, exc="RuntimeError: Expected all tensors to be on the same device, but found at "
                 "least two devices, cuda:0 and cpu!"),
])
def test_mixed_devices_or_dtypes_on_one_card_stay_the_codes(log: str) -> None:
    assert diagnose(log).root.value == "code"


def test_a_library_calling_its_own_exec_generated_loop_with_another_signature_is_a_version_break(
        ) -> None:
    """unsloth execs its patched training loop from a string: a signature that does not fit
    there is the library's releases disagreeing, not the user's call."""
    diagnosis = diagnose(tb(
        ("/srv/app/train.py", "<module>", "trainer.train()"),
        ("/usr/local/lib/python3.10/dist-packages/unsloth/models/llama.py", "train",
         "return inner_training_loop("),
        ("<string>", "_fast_inner_training_loop",
         "batch_samples, num_items_in_batch = self.get_batch_samples(epoch_iterator, n, dev)"),
        exc="TypeError: _unsloth_get_batch_samples() takes 3 positional arguments but 4 were "
            "given"))
    assert diagnosis.root.value == "environment"


@pytest.mark.parametrize("message", [
    "ValueError: Undefined dataset mllm_demo in dataset_info.json.",
    "KeyError: \"Dataset 'coco_2017_trian' is not registered! Available datasets are: ...\"",
])
def test_a_dataset_name_the_registry_does_not_list_is_the_configs(message: str) -> None:
    diagnosis = diagnose(tb(("/kaggle/working/LLaMA-Factory/src/llamafactory/data/parser.py",
                             "get_dataset_list",
                             'raise ValueError(f"Undefined dataset {name} in {DATA_CONFIG}.")'),
                            exc=message))
    assert (diagnosis.rule_id, diagnosis.root.value) == ("MR-ROOT-141", "config")


@pytest.mark.parametrize(("path", "rule", "root"), [
    # the repo's own script importing itself: its import structure
    ("/workspaces/course/week9/gpt_train.py", "MR-ROOT-142", "code"),
    # an installed package's partial import: not the repo's cycle (the version rules' call)
    ("/env/lib/python3.10/site-packages/torchvision/__init__.py", "MR-ENV-003", "environment"),
])
def test_a_circular_import_among_the_repos_own_modules_is_the_code(path: str, rule: str,
                                                                 root: str) -> None:
    diagnosis = diagnose(tb(("/workspaces/course/week9/gpt_train.py", "<module>",
                             "from gpt_train import GPT_CONFIG_124M"),
                            exc="ImportError: cannot import name 'GPT_CONFIG_124M' from "
                                "partially initialized module 'gpt_train' (most likely due to "
                                f"a circular import) ({path})"))
    assert (diagnosis.rule_id, diagnosis.root.value) == (rule, root)


@pytest.mark.parametrize(("frame", "exc", "cause"), [
    # the run's own failure says the CUDA install does not fit: the cause, not a weak sign
    (("/env/lib/python3.10/site-packages/torch/cuda/__init__.py", "_lazy_init",
      "torch._C._cuda_init()"),
     "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
     "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
     "cuda_env_mismatch"),
    # a tensor attribute current torch has (Tensor.T): the installed torch is older
    (("/srv/app/memory_table.py", "probability",
      "sum_prob = torch.exp(outputs.matmul(self.vectors.T) / t).sum(dim=1)"),
     "AttributeError: 'Tensor' object has no attribute 'T'", "version_incompatibility"),
])
def test_a_failure_whose_root_rule_reads_the_cause_names_it(
        frame: tuple[str, str, str], exc: str, cause: str) -> None:
    diagnosis = diagnose(tb(USER, frame, exc=exc))
    assert diagnosis.cause == cause and diagnosis.root.value == "environment"
    assert diagnosis.confidence >= 0.55


_OPTIMIZER_PY = "/env/lib/python3.10/site-packages/torch/optim/optimizer.py"


@pytest.mark.parametrize(("exc", "named"), [
    # the repo's EMA wrapper never ran Optimizer.__init__: newer torch reads what it lacks
    ("AttributeError: 'EMA' object has no attribute '_optimizer_state_dict_pre_hooks'", True),
    ("AttributeError: 'Lookahead' object has no attribute '_optimizer_step_pre_hooks'", True),
    ("AttributeError: 'EMA' object has no attribute 'defaults'", True),
    # torch's own optimizer lacking its own state: not a wrapper of the repo's
    ("AttributeError: 'Adam' object has no attribute 'defaults'", False),
])
def test_an_optimizer_wrapper_written_for_an_older_torch_is_a_version_break(exc: str,
                                                                          named: bool) -> None:
    diagnosis = diagnose(tb(("/srv/app/main.py", "<module>", "optimizer.zero_grad()"),
                            (_OPTIMIZER_PY, "zero_grad",
                             "foreach = self.defaults.get('foreach', False)"), exc=exc))
    assert (diagnosis.rule_id == "MR-ENV-003") is named
    assert (diagnosis.cause == "version_incompatibility") is named


def test_sizes_that_meet_in_an_optimizer_step_are_no_layer_fed_a_wrong_size() -> None:
    """Resuming with an optimizer state that does not fit the model: Adam's exp_avg and the
    gradient differ in size, inside the optimizer's step."""
    step = ("/srv/app/utils/optimization.py", "step",
            "exp_avg.mul_(beta1).add_(grad, alpha=1.0 - beta1)")
    exc = ("RuntimeError: The size of tensor a (768) must match the size of tensor b (2) at "
           "non-singleton dimension 0")
    assert diagnose(tb(USER, step, exc=exc)).cause is None
    # the same message from a loss of an output against its target stays a shape mismatch
    loss = ("/srv/app/train.py", "train", "loss = criterion(outputs, targets)")
    assert diagnose(tb(USER, loss, exc=exc)).cause == "shape_mismatch"


_SAVE = ("/env/lib/python3.9/site-packages/torch/serialization.py", "__init__",
         "super().__init__(torch._C.PyTorchFileWriter(str(name)))")


@pytest.mark.parametrize(("exc", "rule", "root"), [
    ("RuntimeError: Parent directory out/ckpt does not exist.", "MR-ROOT-144", "config"),
    # a missing folder, a full disk or no permission: the message does not say which
    ("RuntimeError: File my_out/checkpoints/checkpoint_0.pt cannot be opened.", "MR-ROOT-145",
     None),
])
def test_a_checkpoint_torch_save_cannot_write(exc: str, rule: str, root: str | None) -> None:
    diagnosis = diagnose(tb(("/srv/app/train.py", "train", "torch.save(state, path)"), _SAVE,
                            exc=exc))
    assert diagnosis.rule_id == rule
    assert (diagnosis.root.value if diagnosis.root else None) == root


@pytest.mark.parametrize("bar", [
    "0it [00:00, ?it/s]",
    "Epoch 1:   0%|          | 0/0 [00:00<?, ?it/s]",
    "train: 0it [00:00, ?it/s, loss=?]",
])
def test_a_failure_right_after_a_loop_over_no_batch_is_the_empty_data(bar: str) -> None:
    """An empty data set: the loop ran zero times, and the code after it failed on what the
    loop sets (a loss never assigned, a mean over zero batches)."""
    log = ("Preparing batches...\n" + bar + "\nEpoch: 1 / 5\n" +
           tb(("train.py", "main", "name = f'epoch-{epoch}-{loss}.pt'"),
              exc="UnboundLocalError: cannot access local variable 'loss' where it is not "
                  "associated with a value"))
    diagnosis = diagnose(log)
    assert diagnosis.root is not None and diagnosis.root.value == "data"
    assert diagnosis.rule_id == "MR-ROOT-148"


@pytest.mark.parametrize("bar", ["100it [00:10, 9.8it/s]", "10/10 [00:01<00:00, 9.1it/s]",
                                 "0it [00:00, ?it/s]\nEpoch 2\n100%|###| 50/50 [00:05<00:00]"])
def test_a_loop_that_ran_leaves_the_failure_after_it_to_the_code(bar: str) -> None:
    log = bar + "\n" + tb(("train.py", "main", "print(total / n)"),
                          exc="ZeroDivisionError: division by zero")
    diagnosis = diagnose(log)
    assert diagnosis.root is not None and diagnosis.root.value == "code"


def test_a_missing_module_named_like_the_scripts_own_folder_is_the_launch_command() -> None:
    """`python slot_attention/train.py` importing `slot_attention`: the project's own package
    is not on the path the command gives; no package to install."""
    log = tb(("slot_attention/train.py", "<module>",
              "from slot_attention.data import CLEVRDataModule"),
             exc="ModuleNotFoundError: No module named 'slot_attention'")
    diagnosis = diagnose(log)
    assert diagnosis.cause is None and diagnosis.rule_id == "MR-ROOT-149"
    assert diagnosis.root is not None and diagnosis.root.value == "config"


@pytest.mark.parametrize("path", ["train.py", "/srv/proj/train.py",
                                  "/env/lib/python3.10/site-packages/einops/x.py"])
def test_a_missing_module_of_no_folder_of_the_users_code_is_an_install(path: str) -> None:
    log = tb((path, "<module>", "import einops"),
             exc="ModuleNotFoundError: No module named 'einops'")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "missing_dependency"


def test_a_src_layout_package_not_installed_is_the_environments() -> None:
    """A src layout (`src/llamafactory/...`) is meant to be installed (pip install -e .)."""
    log = tb(("/home/u/LLaMA-Factory/src/llamafactory/launcher.py", "<module>",
              "from llamafactory.train.tuner import run_exp"),
             exc="ModuleNotFoundError: No module named 'llamafactory'")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "missing_dependency"
    assert diagnosis.root is not None and diagnosis.root.value == "environment"


def test_rng_states_of_more_gpus_than_the_resumed_run_has_are_the_resumes_setup() -> None:
    log = tb(USER, ("/venv/lib/python3.10/site-packages/torch/cuda/random.py", "cb",
                    "default_generator = torch.cuda.default_generators[idx]"),
             exc="IndexError: tuple index out of range")
    diagnosis = diagnose(log)
    assert diagnosis.rule_id == "MR-ROOT-150" and diagnosis.root is not None
    assert diagnosis.root.value == "config"


@pytest.mark.parametrize(("dimension", "rule"), [(1, "MR-ROOT-152"), (0, "MR-ROOT-053")])
def test_an_empty_shard_met_in_an_elementwise_op_is_zero3s(dimension: int, rule: str) -> None:
    """A flat empty ZeRO-3 shard against a LoRA delta meets it past dimension 0; an empty
    batch (dimension 0) is the code's."""
    log = tb(USER, ("/env/lib/python3.10/site-packages/peft/tuners/lora/layer.py", "merge",
                    "base_layer.weight.data = base_layer.weight.data + delta_weight"),
             exc="RuntimeError: The size of tensor a (0) must match the size of tensor b "
                 f"(4096) at non-singleton dimension {dimension}")
    assert diagnose(log).rule_id == rule


def test_an_output_folder_left_by_an_earlier_run_is_the_runs_settings() -> None:
    log = tb(USER, ("/srv/proj/src/training/checkpoints.py", "initialize_checkpoint_dir",
                    "raise FileExistsError("),
             exc="FileExistsError: Checkpoint directory /data/ckpt/run1 already exists. Use "
                 "--overwrite or --resume to indicate how to handle it.")
    diagnosis = diagnose(log)
    assert diagnosis.rule_id == "MR-ROOT-153" and diagnosis.root is not None
    assert diagnosis.root.value == "config"


def test_a_trainer_hook_refusing_the_new_signature_is_a_version_break_without_frames() -> None:
    """The one line a report quotes: the hook's name says whose signature moved."""
    diagnosis = diagnose("TypeError: Seq2SeqTrainer.training_step() takes 3 positional "
                         "arguments but 4 were given\n")
    assert diagnosis.cause == "version_incompatibility"
    assert diagnosis.root is not None and diagnosis.root.value == "environment"


def test_cuda_in_a_forked_dataloader_worker_is_the_codes() -> None:
    """The worker's original error is CUDA refusing a forked process: the Dataset uses the
    GPU; no sample is bad."""
    log = ("Traceback (most recent call last):\n  File \"train.py\", line 80, in <module>\n"
           "    for batch in loader:\nRuntimeError: Caught RuntimeError in DataLoader worker "
           "process 0.\nOriginal Traceback (most recent call last):\n  File \"/env/lib/"
           "python3.10/site-packages/torch/utils/data/_utils/worker.py\", line 308, in "
           "_worker_loop\n    data = fetcher.fetch(index)\n  File \"/srv/sd/dataset.py\", line "
           "41, in __getitem__\n    latents = self.vae.encode(image.cuda())\nRuntimeError: "
           "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
           "you must use the 'spawn' start method\n")
    diagnosis = diagnose(log)
    assert diagnosis.cause == "dataloader_worker_error"
    assert diagnosis.root is not None and diagnosis.root.value == "code"
    assert "spawn" in diagnosis.fix


def test_numpy_concatenating_no_arrays_in_a_data_set_is_an_empty_data_set() -> None:
    """mmdet's CocoDataset with a class list that keeps no annotation: numpy's concatenate
    of an empty list, raised through the runner's registry."""
    diagnosis = diagnose("ValueError: class `EpochBasedTrainLoop` in mmengine/runner/loops.py: "
                         "class `CocoDataset` in mmdet/datasets/coco.py: need at least one "
                         "array to concatenate\n")
    assert diagnosis.rule_id == "MR-ROOT-024" and diagnosis.root is not None
    assert diagnosis.root.value == "data"


def test_a_time_limit_printed_after_an_exception_is_not_its_root() -> None:
    """The job raised, then the scheduler's line came (the allocation ran out while the shell
    went on): the exception is the failure, the time limit no reading of it."""
    log = tb(("/home/u/rl/train.py", "main", "os.makedirs(FLAGS.ckpt_dir, exist_ok=True)"),
             exc="AttributeError: ckpt_dir")
    log += ("slurmstepd: error: *** JOB 4242 ON gpu7 CANCELLED AT 2022-11-07T11:30:22 DUE TO "
            "TIME LIMIT ***\n")
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "AttributeError"
    assert diagnosis.rule_id != "MR-ROOT-139"
    # the stop alone is the time limit's
    alone = diagnose("step 900 loss 1.23\nslurmstepd: error: *** JOB 4242 ON gpu7 CANCELLED AT "
                     "2022-11-07T11:30:22 DUE TO TIME LIMIT ***\n")
    assert alone.rule_id == "MR-ROOT-139"


def test_ragged_token_sequences_made_into_one_tensor_were_not_padded() -> None:
    """transformers' default collator turning unpadded features into a tensor: how the code
    batches (pad, or a padding collator), not a bad sample."""
    log = tb(("/srv/e5/train.py", "main", "trainer.train()"),
             ("/env/lib/python3.8/site-packages/transformers/data/data_collator.py",
              "torch_default_data_collator", "batch[k] = torch.tensor([f[k] for f in features])"),
             exc="ValueError: expected sequence of length 75 at dim 1 (got 81)")
    diagnosis = diagnose(log)
    assert diagnosis.rule_id == "MR-ROOT-156" and diagnosis.root is not None
    assert diagnosis.root.value == "code" and "DataCollatorWithPadding" in diagnosis.fix


@pytest.mark.parametrize(("frames", "root"), [
    # the DataLoader's default collate stacking the samples: the samples' sizes
    ([("/srv/app/train.py", "train", "for batch in loader:"),
      ("/env/lib/python3.10/site-packages/torch/utils/data/_utils/collate.py", "collate",
       "return torch.stack(batch, 0, out=out)")], "data"),
    # a stack of the code's own tensors outside any batching (features kept per class)
    ([("/srv/s3c/models/helper.py", "save_features",
       "data_features = torch.stack(data_features).view(-1, 64)")], "code"),
    # the message alone: the usual thrower is the default collate
    ([], "data"),
])
def test_a_stack_of_unequal_tensors_is_the_samples_only_where_samples_are_batched(
        frames: list[tuple[str, str, str]], root: str) -> None:
    exc = ("RuntimeError: stack expects each tensor to be equal size, but got [100, 512] at "
           "entry 0 and [64, 512] at entry 28")
    diagnosis = diagnose(tb(*frames, exc=exc) if frames else exc + "\n")
    assert diagnosis.root is not None and diagnosis.root.value == root


def test_a_data_files_records_without_the_keys_the_loader_reads_are_the_data() -> None:
    """A loader's KeyError on a record, re-raised as its own check of the file's format: the
    data file's, not the code's."""
    log = tb(("/content/main.py", "<module>", "dataset = InstructionDataset('./tasks.jsonl')"),
             ("/usr/lib/python3.10/dist-packages/xturing/datasets/instruction_dataset.py",
              "from_jsonl", "raise ValueError("),
             exc="ValueError: The jsonl file should have keys text, instruction and target")
    diagnosis = diagnose(log)
    assert diagnosis.rule_id == "MR-ROOT-157" and diagnosis.root is not None
    assert diagnosis.root.value == "data"
    # a setting that must have keys is no data file
    other = diagnose("ValueError: lr_scheduler_kwargs should have keys warmup and decay\n")
    assert other.rule_id != "MR-ROOT-157"


@pytest.mark.parametrize("message", [
    "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
    "InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: "
    "(None, 'g++')",
    "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
])
def test_no_compiler_for_what_the_run_compiles_is_the_environment(message: str) -> None:
    """torch.compile's C++ wrapper or a Triton kernel built on a machine with no C/C++
    compiler: the machine's toolchain, not a bug of the compiler backend."""
    diagnosis = diagnose(message + "\n")
    assert diagnosis.rule_id == "MR-ROOT-086" and diagnosis.root is not None
    assert diagnosis.root.value == "environment"


def test_one_library_calling_anothers_class_with_arguments_it_does_not_take() -> None:
    """skrl passing `verbose` to torch 2.7's LRScheduler: the two releases do not fit; a
    library running the user's own forward with arguments it does not take is not this."""
    log = tb(("/srv/rl/train.py", "main", "runner = Runner(env, cfg)"),
             ("/env/lib/python3.10/site-packages/skrl/resources/schedulers/torch/kl_adaptive.py",
              "__init__", "super().__init__(optimizer, last_epoch, verbose)"),
             exc="TypeError: LRScheduler.__init__() takes from 2 to 3 positional arguments but "
                 "4 were given")
    diagnosis = diagnose(log)
    assert diagnosis.failure is not None and root_of(diagnosis.failure).id == "MR-ROOT-158"
    assert diagnosis.cause == "version_incompatibility"  # the placement corroborates it
    assert diagnosis.root is not None and diagnosis.root.value == "environment"
    own = tb(("/srv/app/train.py", "main", "trainer.fit(model)"),
             ("/env/lib/python3.10/site-packages/lightning/pytorch/core/module.py",
              "predict_step", "return self(*batch)"),
             exc="TypeError: LitNet.forward() takes 2 positional arguments but 3 were given")
    placed = diagnose(own)
    assert placed.failure is not None and root_of(placed.failure).id != "MR-ROOT-158"
