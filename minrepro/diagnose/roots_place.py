"""Root rules of the last tier, tried after the evidence rules of `roots.py`: what the
message alone does not decide, decided by where the failure was raised (the user's or the
repo's own code, a library refusing what that code handed it, torch's own asserts)."""

from __future__ import annotations

from minrepro.diagnose.rootrule import (
    CALLED,
    CALLER,
    LIBRARY,
    NOT_ASKED_OF_SELF,
    OWN,
    USER,
    VERSION,
    RootRule,
)
from minrepro.model import RootClass

# a RuntimeError that says this is no tensor operation refusing its inputs: the GPU, the
# runtime, the network, a worker (other rules, or none, decide those)
_NOT_A_TENSOR_OP = (r"(?i)CUDA|NCCL|cuDNN|CUBLAS|illegal memory|launch failure|out of memory|"
                    r"DataLoader worker|gloo|distributed|timed? ?out|connection|socket|"
                    r"ProcessGroup|c10d|HIP|MPS|INTERNAL ASSERT")
# a name every module imports itself (the standard library's, numpy's, torch's usual
# aliases, typing's): one missing in a library is an import the library forgot, not an
# optional dependency left out
_COMMON_NAME = (r"name '(?:np|pd|plt|os|sys|re|math|json|time|random|copy|glob|shutil|pickle|"
                r"logging|warnings|itertools|functools|collections|datetime|inspect|torch|nn|F|"
                r"partial|wraps|Path|Optional|List|Dict|Tuple|Union|Any|Callable|defaultdict|"
                r"OrderedDict|dataclass|field)' is not defined")

C, D, K, E, F = (RootClass.CONFIG, RootClass.DATA, RootClass.CODE, RootClass.ENVIRONMENT,
                 RootClass.FRAMEWORK)

PLACE_RULES: tuple[RootRule, ...] = (
    # token sequences of different lengths made into one tensor (transformers'
    # default_data_collator, torch.tensor of ragged lists): nothing padded them to one length
    RootRule("MR-ROOT-156", K, "The batch's sequences were not padded to one length",
             "Pad when batching: tokenize with padding='max_length' (or padding=True) and "
             "truncation, or use a padding collator (transformers.DataCollatorWithPadding, "
             "DataCollatorForSeq2Seq) instead of the default one.", types=("ValueError",),
             message=r"expected sequence of length \d+ at dim \d+ \(got \d+\)"),
    # code: raised in the user's or the repo's own code
    RootRule("MR-ROOT-059", C, "A setting was left unset (None) where the code needs a value",
             "Give the setting the raising line reads (a command-line flag, a config key, or "
             "the launcher's config: `accelerate config`).", types=("AttributeError", "TypeError"),
             # the headline names the attribute, the raising line reads it off a setting
             message=r"'NoneType' object has no attribute '(\w+)'[^\n]*\n[^\n]*\b(?:args|opts?|"
                     r"cfg|config|conf|hparams|training_args)(?:\.\w+){1,4}\.\1\b",
             scope="raise"),
    RootRule("MR-ROOT-069", D, "A sample failed to load (None) inside a DataLoader worker",
             "Find the sample the worker was reading (cv2.imread and PIL return None or raise "
             "on a missing or corrupt file) and fix or skip it; check the paths in the "
             "annotation list.", types=("AttributeError", "TypeError"),
             message=r"'NoneType' object", in_worker=True),
    RootRule("MR-ROOT-070", C, "A path setting was left unset (None) where a file is opened",
             "Give the path the raising line opens (the config key or flag that names the "
             "file); a default of None reaches open() or os.path as None.",
             types=("TypeError",),
             message=r"expected str, bytes or os\.PathLike object, not NoneType"),
    RootRule("MR-ROOT-039", None, "A value was None where an object was expected",
             "None comes from a setting not given, a file that failed to load (cv2.imread), "
             "or the code: look at where the value was made.", types=("AttributeError",
                                                                     "TypeError"),
             message=r"'NoneType' object"),
    RootRule("MR-ROOT-041", K, "The code passed a plain Python value where a tensor or model "
             "was expected", "Read the innermost frame of your code: convert the value "
             "(torch.stack / torch.tensor) or pass the right object.",
             types=("AttributeError", "TypeError"),
             message=r"'(?:list|dict|tuple|str|int|float|bool|ndarray|generator|module)' "
                     r"object (?:has no attribute|is not|does not)"),
    # torch refusing what the caller's code handed it, wherever inside torch it was raised
    RootRule("MR-ROOT-053", K, "The code uses a tensor in a way torch does not allow",
             "Read the innermost frame of your code: index or .item() a 0-d tensor instead of "
             "iterating it, .detach().cpu() before .numpy(), reduce a many-element tensor "
             "before `if` / float().",
             types=("TypeError", "ValueError", "RuntimeError"),
             message=r"iteration over a 0-d tensor|len\(\) of a 0-d tensor|only (?:one element|"
                     r"integer) tensors can be converted|a Tensor with \d+ elements cannot be "
                     r"converted to Scalar|Boolean value of Tensor with more than one (?:value|"
                     r"element) is ambiguous|Can't call numpy\(\) on Tensor that requires grad|"
                     r"can't convert (?:cuda|CUDA|mps)[^\n]{0,40}to numpy|"
                     r"backward can only be called in training mode|"
                     r"a leaf Variable that requires grad (?:is being|has been) used in an "
                     r"in-place operation|"
                     # tensors of sizes that do not fit together (broadcast, cat, view)
                     r"The size of tensor a \(\d+\) must match the size of tensor b|"
                     r"Sizes of tensors must match except in dimension|"
                     r"is invalid for input of size \d+"),
    RootRule("MR-ROOT-043", K, "A custom autograd Function returns the wrong gradients",
             "Return one gradient per input of forward (None for inputs that need none), "
             "each shaped like its input.",
             message=r"returned an incorrect number of gradients|returned an invalid gradient|"
                     r"function \w+Backward returned"),
    # a global name missing inside an installed package's own function: the library imports
    # it only where an optional dependency is installed (transformers' `is_peft_available()`
    # guards: `LoraConfig`, `init_empty_weights`, `PartialState`; apex's `amp`), so the
    # dependency is missing or too old, not a bug of the library
    # ...but a model's downloaded code (Hub remote code, a torch.hub checkout) is no release
    # with optional imports: a name it never defines is that code's bug
    RootRule("MR-ROOT-147", F, "A model's downloaded code uses a name it never defines",
             "Report it to the model's repository; pin the model revision that worked "
             "(from_pretrained(..., revision=...)) or the transformers release it was written "
             "for.", types=("NameError",), raised_in=LIBRARY,
             packages=("transformers_modules", "torch.hub", "<string>")),
    RootRule("MR-ROOT-146", E, "A library uses a name it imports only when an optional "
             "dependency is installed: that package is missing or too old",
             "Install (or upgrade) the optional package that provides the name the message "
             "gives (the library's extras, e.g. pip install -U peft / accelerate) in the "
             "environment that runs the job.", types=("NameError",), raised_in=LIBRARY,
             unless=_COMMON_NAME),
    # a local read before it is set, inside an installed package's own function: a code path
    # of the library that never set it; a standard module or name it forgot to import
    # (a Hub model's remote code and torch.hub checkouts count as libraries: model.package_of)
    RootRule("MR-ROOT-085", F, "A library's own code uses a name it never set on this code "
             "path (a bug in the library)", "Report it to the library with the "
             "settings that take this path; install the release before the change, or set the "
             "option that path needs.", types=("UnboundLocalError", "NameError"),
             raised_in=LIBRARY),
    # pdb's quit out of a breakpoint the code still holds (`breakpoint()`, `pdb.set_trace()`)
    RootRule("MR-ROOT-100", K, "The run stopped in the debugger: a breakpoint left in the code",
             "Remove the breakpoint() / pdb.set_trace() from the code (or run with "
             "PYTHONBREAKPOINT=0) so an unattended job does not stop in the debugger.",
             types=("BdbQuit",)),
    RootRule("MR-ROOT-042", K, "The code does not run as written (a name or syntax error)",
             "Read the line the error names: a typo, a missing import, or code for another "
             "Python.", types=("NameError", "UnboundLocalError", "SyntaxError",
                               "IndentationError", "TabError")),
    # the run's settings object (OmegaConf, yacs, mmcv, argparse, EasyDict) lacking a key
    RootRule("MR-ROOT-056", C, "The run's config has no such key",
             "Add the key to the config file (or the command line), or check its spelling "
             "against what the code reads.", types=("AttributeError",),
             message=r"'(?:DictConfig|ListConfig|CfgNode|ConfigDict|Config|EasyDict|Namespace|"
                     r"AttrDict|Munch|SimpleNamespace|Box)' object has no attribute"),
    # a library's own code reading its own object's attribute, which is not there
    RootRule("MR-ROOT-074", F, "A library's code asks its own object for an attribute it does "
             "not have", "A bug in the library (or a mix of its releases): search its issues for "
             "the message, try the release before or after, or avoid the option that takes "
             "this path.", types=("AttributeError", "ModuleAttributeError"), raised_in=OWN),
    # a framework's own kinds of object (a Trainer, a config, a tokenizer, an optimizer): what
    # the code asks of them and they lack is an API the installed version renamed or dropped
    RootRule("MR-ROOT-054", E, "A framework object lacks an attribute the code uses: the "
             "installed version renamed or removed it", "Install the framework version the code "
             "was written for (the repo's requirements), or port the attribute to the installed "
             "API (the message's 'Did you mean' names it where Python knows).",
             types=("AttributeError",), scope="raise",
             # ... but not one the raising line reads off `self` (the repo's FluxNetworkTrainer
             # asking for `self.sample_prompts_te_outputs`): its own code never set it
             raised_in=NOT_ASKED_OF_SELF,
             # (the object, or its class: `type object 'Trainer' has no attribute
             # 'add_argparse_args'`, a classmethod Lightning 2.0 dropped)
             message=r"(?:type object )?'(?:\w*Trainer|Accelerator|\w*Arguments|\w*Config|"
                     r"\w*Tokenizer(?:Fast)?|\w*Processor|\w*Pipeline|DeepSpeedEngine|"
                     r"\w*LR[Ss]cheduler|\w*Optimizer|\w*Strategy|\w*Callback|\w*DataModule|"
                     r"LightningModule|_\w+DataLoaderIter)'(?: object)? has no attribute '\w+'"),
    # a tensor asked for an attribute that today's torch.Tensor has (`.T`, `.mT`,
    # `.nan_to_num`): the code was written for a newer torch than the one installed
    RootRule("MR-ROOT-096", E, "The code uses a tensor attribute that the installed torch is "
             "too old to have", "Install the torch release the code was written for (the "
             "repo's requirements); the attribute exists in current releases.",
             types=("AttributeError",), api="tensor_api",
             message=r"'(?:Tensor|Parameter|Variable|torch\.(?:cuda\.)?\w*Tensor)' object has no "
                     r"attribute", corroborates=VERSION),
    RootRule("MR-ROOT-044", K, "The code asks an object of its own for an attribute it does "
             "not have", "Read the innermost frame of your code: a typo, a model wrapped by "
             "DataParallel/DDP (use model.module), or an attribute set only on another path.",
             types=("AttributeError", "ModuleAttributeError"), raised_in=CALLER,
             message=r"^(?:[\w.]+\.)?(?:Module)?AttributeError: '[A-Z]\w*' object has no "
                     r"attribute"),
    # raised inside a library, on an object of another library: the two installed versions
    # do not fit (peft reading a bitsandbytes field the installed bitsandbytes lacks)
    RootRule("MR-ROOT-046", E, "A library reads an attribute that another installed "
             "library's version does not have", "Install versions that fit each other (the "
             "pairs the repo's requirements pin; upgrade the one named in the message).",
             types=("AttributeError",), raised_in=LIBRARY,
             message=r"^(?:[\w.]+\.)?AttributeError: '[A-Z]\w*' object has no attribute",
             corroborates=VERSION),
    # last: a library refusing what the user's code handed it (a value of the wrong kind, a
    # name registered twice, an eval-mode module asked for a backward); settings, versions and
    # data that explain such a refusal are the rules above
    RootRule("MR-ROOT-060", C, "A library does not implement the option or combination asked "
             "for", "Read the raising frame: pick a setting the library supports for this model "
             "(or a release that adds it).", types=("NotImplementedError",), raised_in=LIBRARY),
    # torch.distributions checks the observed values against the distribution's support
    # (counts that are floats or negative for a Poisson, labels outside a Categorical's range)
    RootRule("MR-ROOT-137", D, "The observed values do not lie in the support of the "
             "distribution they are scored under", "Check the data fed as the distribution's "
             "value: its type and range must fit the support the message names (raw integer "
             "counts for a Poisson or GammaPoisson, 0..K-1 for a Categorical).",
             types=("ValueError",), message=r"Expected value argument \(.{0,200}\) to be "
                                            r"within the support"),
    RootRule("MR-ROOT-061", D, "A data file lacks a key its format needs (an annotation or "
             "table column)", "Check the data file against the format the loader expects "
             "(COCO json: images, annotations, categories; the CSV's column names).",
             types=("KeyError",), packages=("pycocotools", "pandas", "lvis")),
    RootRule("MR-ROOT-065", C, "A file, folder or dataset the run was told to use is not "
             "there", "Check the path in the config or command line (relative paths resolve "
             "from the directory the job starts in).",
             types=("Exception", "RuntimeError", "ValueError", "AssertionError", "OSError",
                    "KeyError"),
             message=r"(?i)\b(?:dataset|data|file|folder|path|directory|dir|weights?|model|"
                     r"checkpoint|config|root|images?|annotations?)\b[^\n]{0,60}\b(?:not (?:be )?"
                     r"found|does not exists?|doesn't exists?|not exists?)", scope="raise"),
    RootRule("MR-ROOT-066", D, "A value in the data is not in the form the code parses",
             "Find the sample or annotation holding the value the message quotes and fix it "
             "(or parse it the way the data writes it).", types=("ValueError",),
             message=r"invalid literal for int\(\) with base \d+|could not convert string to "
                     r"float", scope="raise"),
    RootRule("MR-ROOT-057", K, "A tensor operation in the training code refused its inputs",
             "Read the innermost frame of your code: the shapes, dtypes or values it passes do "
             "not fit the operation.", types=("RuntimeError",), raised_in=USER,
             unless=_NOT_A_TENSOR_OP),
    RootRule("MR-ROOT-067", K, "A torch operation the training code called refused its inputs",
             "Read the innermost frame of your code: the shapes, operands or values it passes "
             "do not fit the torch call.", types=("RuntimeError",), raised_in=CALLED,
             packages=("torch",), unless=_NOT_A_TENSOR_OP),
    # one installed library calling a class's method with arguments it does not take
    # (skrl's scheduler passing `verbose` to torch's LRScheduler, a trainer calling a hook
    # with the older signature): the two releases do not fit each other. Not a library
    # running the user's own forward, __getitem__ or __call__ (the user's signature is off)
    RootRule("MR-ROOT-158", E, "An installed library calls another's API with arguments "
             "the installed release does not take", "Install releases of the two that fit "
             "each other (the calling library's requirements pin the other: pip install "
             "'pkg==X'), or the caller's release that supports the installed one.",
             types=("TypeError",), raised_in=LIBRARY, corroborates=VERSION,
             message=r"\b[A-Z]\w*\.\w+\(\) (?:takes (?:from )?\d+ (?:to \d+ )?positional "
                     r"arguments? but \d+ (?:was|were) given|missing \d+ required "
                     r"(?:positional|keyword-only) arguments?|got an unexpected keyword)",
             unless=r"\.(?:forward|__getitem__|__len__|__iter__|__call__|__next__)\(\)"),
    RootRule("MR-ROOT-055", K, "A library refused what the code handed it",
             "Read the innermost frame of your code in the traceback and the library's message: "
             "the value, type or call it passes does not fit what the library takes.",
             types=("ValueError", "AssertionError", "TypeError", "StopIteration"),
             raised_in=CALLED),
    # torch.compile's backend failing on a model (what the environment rules did not place:
    # a compiler or Triton missing, a card too old): the compiler's own bug
    RootRule("MR-ROOT-124", F, "torch.compile's backend failed while compiling the model",
             "Run without torch.compile (or with backend='eager' / 'aot_eager' to find the "
             "stage that fails), try the nearest other torch release, and report it with "
             "TORCH_LOGS=+dynamo and the minifier (TORCHDYNAMO_REPRO_AFTER='aot').",
             types=("BackendCompilerFailed", "InductorError", "LoweringException")),
    RootRule("MR-ROOT-072", F, "An assertion inside PyTorch's own code failed",
             "Search PyTorch's issues for the assertion's message and the torch version; try "
             "the nearest other torch release (a known bug is often fixed or not yet in).",
             types=("AssertionError",), raised_in=LIBRARY, packages=("torch",)),
    # an assert of the repo's own data-reading code: the data is not what the code checks
    # for (a label list of another length, an annotation without a class)
    RootRule("MR-ROOT-082", D, "An assertion of the code that reads the data failed on the data",
             "The data (an annotation, a label file, a split list) does not hold what the "
             "reading code asserts: find the sample it was reading and check its format against "
             "the repo's data preparation steps.", types=("AssertionError",), raised_in=USER,
             function=r"(?i)__getitem__|\w*(?:read|load|prepare|parse|build|make|get|filter|"
                      r"preprocess|process|convert|collate)_?\w*(?:corpus|roidb|dataset|data|"
                      r"annotations?|anno|labels?|samples?|images?|examples?|records|gt|targets?|"
                      r"split)s?|\w*(?:roidb|dataset|corpus|annotations?)\w*"),
    # any other assert of the repo's own code that checks the data it was given (settings
    # are MR-ROOT-034's): two lists of one length, no NaN in a tensor (x == x), the labels or
    # samples it expects; one about its own values (`loss.dim() == 0`) stays the code's
    RootRule("MR-ROOT-116", D, "An assertion of the training code about its data failed",
             "Print what the assertion compares (its line in the traceback) for the batch or "
             "sample it stopped on: the data does not hold what the code expects (lengths that "
             "agree, finite values, the labels or ids it knows).", types=("AssertionError",),
             raised_in=USER, scope="raise",
             message=r"(?i)\blen\(|\b(?:labels?|targets?|gt|annotations?|anno|samples?|dataset|"
                     r"data|images?|imgs?|tokens?|vocab|class(?:es)?|isnan|isfinite)\b|"
                     r"\b(\w+(?:\.\w+)*)\s*==\s*\1\b"),
    RootRule("MR-ROOT-040", K, "An error in the training code itself",
             "Read the innermost frame of your code in the traceback: the bug is there.",
             types=("TypeError", "AttributeError", "NameError", "UnboundLocalError",
                    "IndexError", "KeyError", "ValueError", "AssertionError",
                    "ZeroDivisionError", "NotImplementedError", "RecursionError",
                    "StopIteration", "SyntaxError", "IndentationError"),
             raised_in=USER),
)
