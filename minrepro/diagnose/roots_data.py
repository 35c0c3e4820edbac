"""Root rules of the data tier: the samples (unreadable, corrupt, labels out of range, an
empty or ragged data set). Tried after the hardware, framework and environment evidence of
`roots.py` and before its batch, checkpoint and config rules; the order within is the order
they are tried.
"""

from __future__ import annotations

from minrepro.diagnose.rootrule import RootRule
from minrepro.model import RootClass

C, D, K = RootClass.CONFIG, RootClass.DATA, RootClass.CODE

DATA_RULES: tuple[RootRule, ...] = (
    RootRule("MR-ROOT-020", D, "A sample could not be read in a DataLoader worker",
             "Find the sample (the index or path in the message), drop or fix it; validate "
             "the data set before training.", in_worker=True,
             # a worker killed or gone is not a sample that failed to load
             unless=r"is killed by signal|exited unexpectedly|worker \(pid\(s\)"),
    RootRule("MR-ROOT-021", D, "A data file is corrupt or not in the expected format",
             "Validate the data files (open each once before training) and drop the bad ones.",
             types=("UnidentifiedImageError", "JSONDecodeError", "UnicodeDecodeError",
                    "DecompressionBombError", "ParserError", "EmptyDataError"),
             message=r""),
    RootRule("MR-ROOT-022", D, "An image or sample file is truncated or unreadable",
             "Validate the data files and drop the bad ones.", scope="raise",
             # what the failure says (a module named corrupter.py in the frames says nothing)
             message=r"(?i)cannot identify image file|image file is truncated|"
                     r"Invalid data found when processing|\bcorrupt(?:ed)? (?:file|image|data|"
                     r"sample|jpe?g|png|zip|archive|header|record)|(?:is|was|are|seems) "
                     r"(?:\w+ )?corrupt(?:ed)?\b|Corrupt JPEG data"),
    # a loader's own check of a data file's records: they lack the keys (columns, fields)
    # it reads (a JSONL of instruction/instances where text/instruction/target are expected)
    RootRule("MR-ROOT-157", D, "A data file's records lack the keys or columns the loader "
             "reads", "Convert the data file to the format the loader documents (the keys or "
             "columns its message names), or point the loader's column settings at the "
             "file's own names.", types=("ValueError", "KeyError", "AssertionError"),
             scope="raise",
             message=r"(?i)\b(?:files?|data ?sets?|data|jsonl?|csv|records?|annotations?|"
                     r"samples?|rows?)\b[^\n]{0,40}?\b(?:should|must) (?:have|contain|include)"
                     r"(?: the)?(?: following)? (?:keys|columns|fields)\b"),
    # BCELoss's kernel checks its inputs are probabilities: the model's outputs, not the data
    RootRule("MR-ROOT-103", K, "BCELoss got outputs outside [0, 1]: the model's last layer has "
             "no sigmoid", "Use BCEWithLogitsLoss on the raw outputs (it applies the sigmoid "
             "itself, stably), or end the model with torch.sigmoid.",
             message=r"input_val >= zero && input_val <= one"),
    RootRule("MR-ROOT-023", D, "A CUDA kernel asserted on an index (labels or ids out of "
             "range, most often)", "Check the labels against the class count and the "
             "token ids against the vocabulary (run once on CPU for the exact error).",
             # (a message a console wrapped may end at "device-side assert"; torch 2's
             # "to enable device-side assertions" hint is in every CUDA error)
             message=r"device-side assert(?!ions)|Assertion `.*(?:n_classes|target|"
                     r"srcIndex < srcSelectDimSize|index out of bounds)"),
    # a label used as an index: its value is past the classes the tensor was sized for
    RootRule("MR-ROOT-078", D, "A label or class id is larger than the classes the code "
             "sizes for", "Check the labels' range against the number of classes in the config "
             "(class ids from 0 to num_classes - 1).", types=("RuntimeError", "IndexError"),
             scope="raise", message=r"(?s)index -?\d+ is out of bounds for (?:dim|axis|"
                                    r"dimension) ?\d* with size \d+.*\b(?:target|label|cls|class)"),
    # a grid built from the annotations indexed past its size (YOLO's build_targets with box
    # coordinates in pixels where 0-1 are expected, a box centred outside its image)
    RootRule("MR-ROOT-107", D, "An annotation lies outside the grid the targets are built on "
             "(box coordinates not normalised, or a box outside its image)", "Check the "
             "annotations: coordinates in the unit the loader expects (0-1 for YOLO txt "
             "labels), no box outside its image; clip or drop the bad ones.",
             types=("RuntimeError", "IndexError"), function=r"build_targets?|encode_targets?",
             message=r"index -?\d+ is out of bounds for (?:dim|axis|dimension)"),
    # BCE's own check: the model has as many outputs as it was built with, the labels more
    RootRule("MR-ROOT-079", C, "The model's outputs do not fit the labels (the number of "
             "classes or outputs it was built with)", "Build the head with as many outputs as "
             "the labels have classes (num_classes in the config), or encode the labels to "
             "the head's size.", types=("ValueError",),
             message=r"Target size \(torch\.Size\(\[[\d, ]*\]\)\) must be the same as input "
                     r"size"),
    RootRule("MR-ROOT-024", D, "The data set is empty (no samples were found or left after "
             "filtering)", "Check the data path and the filters; print len(dataset) before "
             "training.", message=r"num_samples should be a positive integer value, but got "
             r"num_samples=0|datasets should not be an empty iterable|"
             # numpy's concatenate of an empty list: the samples (or the annotations that
             # a class filter kept) of a data set with none (mmdet's CocoDataset)
             r"need at least one array to concatenate|"
             r"(?i:dataset is empty|found 0 (?:files|images|samples)|"
             r"no (?:images|samples|files) (?:were )?found)"),
    # the loop ran over no batch (its progress bar stopped at 0 items), then the code after it
    # failed on what the loop sets: a loss never assigned, a mean over 0 batches, an empty list
    RootRule("MR-ROOT-148", D, "The data loader gave no batch (an empty data set), and the "
             "code after the loop failed on what the loop never set", "Check the data path, "
             "its file pattern and the filters (print len(dataset) and len(loader) before "
             "training); with drop_last=True a data set smaller than one batch gives none.",
             types=("UnboundLocalError", "ZeroDivisionError", "StopIteration", "IndexError",
                    "ValueError", "RuntimeError", "NameError", "KeyError", "TypeError"),
             after_no_batches=True),
    # the default collate stacking samples of different sizes (variable-length audio or
    # text, images not resized to one shape): the samples, not the model
    RootRule("MR-ROOT-114", D, "The samples of a batch differ in size, so the batch cannot be "
             "stacked", "Give every sample one size in the dataset's transform (resize, crop, "
             "pad, trim audio to a fixed length), or batch them with a collate_fn that pads "
             "(or batch_size=1 to find the odd sample).",
             # where the traceback shows frames, one of them batching samples (a collate
             # function, a Dataset's __getitem__, the DataLoader's fetch): a stack of the
             # code's own tensors elsewhere (features saved per class) is no batch of samples
             message=r"(?s)\A(?=.*stack expects each tensor to be equal size[,.] but got)"
                     r"(?:(?!.*File \")|.*\bin (?:\w*collat\w*|__getitem__|fetch|__next__|"
                     r"_next_data|_worker_loop)\b)"),
    # ... concatenated by a collate function of the repo's (`torch.vstack(pixel_values)`)
    RootRule("MR-ROOT-151", D, "The samples of a batch differ in size, so the collate "
             "function cannot concatenate them", "Give every sample one size in the dataset's "
             "transform, pad them in the collate function, or use batch_size=1 where the "
             "model's collator supports only that.", types=("RuntimeError",),
             function=r"\w*collat\w*",
             message=r"Sizes of tensors must match except in dimension"),
)
