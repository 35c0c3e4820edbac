"""MetricExtractor: real metric line formats -> normalised MetricRecords."""

from __future__ import annotations

import math

import pytest

from minrepro.diagnose.extract.metrics import MetricExtractor, normalise
from minrepro.model import Line, MetricRecord


def parse(text: str) -> MetricRecord | None:
    events = list(MetricExtractor().feed(Line(line=7, text=text, rank=1)))
    return events[0] if events else None


# (id, line, expected values (subset), expected step)
CASES = [
    ("hf_trainer_dict",  # corpus lr_divergence__01.log
     "{'loss': 0.6623, 'learning_rate': 0.00017682241998246423, 'epoch': 0.24}",
     {"loss": 0.6623, "learning_rate": 0.00017682241998246423, "epoch": 0.24}, None),
    ("hf_dict_grad_norm",
     "{'loss': 2.3026, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5}",
     {"loss": 2.3026, "grad_norm": 1.2, "learning_rate": 5e-05, "epoch": 0.5}, None),
    ("hf_eval_dict_fullwidth",  # corpus single_class_labels__04.log (Chinese-locale paste)
     "以 3000 步为单位： {'eval_loss'： 0.6934958696365356， 'eval_accuracy'： 0.49746621621623， "
     "'eval_matthews_correlation'： 0.0， 'eval_recall'： 0.5， 'epoch'： 2.4}",
     {"eval_loss": 0.6934958696365356, "eval_accuracy": 0.49746621621623,
      "eval_matthews_correlation": 0.0, "eval_recall": 0.5, "epoch": 2.4}, None),
    ("fairseq_json_strings",  # fairseq train_inner record (quoted in a repo log)
     '2021-03-08 12:34:45 | INFO | train_inner | {"epoch": 1, "update": 0.001, "loss": "25.22", '
     '"lr": "4e-05", "gnorm": "19.777", "loss_scale": "4", "num_updates": "2"}',
     {"loss": 25.22, "learning_rate": 4e-05, "grad_norm": 19.777, "loss_scale": 4.0}, 2),
    ("metric_logger",  # corpus healthy__01.log (LLaMA-Adapter / MAE MetricLogger)
     "[05:19:47.352788] Epoch: [1]  [1480/1504]  lr: 0.000012  closs: 0.9233 (0.9531)  grad_norm: "
     "0.2695 (0.3902)  time: 4.3916  data: 0.0002  max mem: 51710",
     {"epoch": 1.0, "learning_rate": 0.000012, "loss": 0.9233, "grad_norm": 0.2695,
      "batch_time": 4.3916, "data_time": 0.0002, "memory_mb": 51710.0}, 1480),
    ("imagenet_example",  # corpus dataloader_bottleneck__01.log (pytorch/examples imagenet)
     "Epoch: [0][1760/5005]   Time 1.599 (2.648)      Data 1.296 (2.388)      Loss 5.6502 (6.3792)"
     "    Prec@1 6.250 (1.374)    Prec@5 14.844 (4.918)",
     {"epoch": 0.0, "batch_time": 1.599, "data_time": 1.296, "loss": 5.6502, "accuracy": 6.25},
     1760),
    ("lightning_tqdm",  # corpus healthy__04.log
     "Epoch 1:  39%|█████████▍              | 4846/12331 [05:59<09:15, 13.47it/s, loss=0.0136, "
     "v_num=1]",
     {"epoch": 1.0, "loss": 0.0136, "throughput": 13.47}, 4846),
    ("nemo_postfix",  # pytorch/pytorch#118369 comment (NeMo/Lightning)
     "Epoch 0:   6%|██      | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6, v_num=95nc, "
     "reduced_train_loss=2.590, global_step=3.2e+4, consumed_samples=2.56e+7]",
     {"loss": 2.6, "throughput": 1.37}, 32000),
    ("tqdm_seconds_per_it",  # corpus fp16_overflow__01.log
     "  9%|▉         | 243/2724 [8:59:24<91:26:08, 132.68s/it]",
     {"throughput": 1 / 132.68}, 243),
    ("keras", "1875/1875 [==============================] - 5s 3ms/step - loss: 0.2950 - "
     "accuracy: 0.9150 - val_loss: 0.1400 - val_accuracy: 0.9580",
     {"loss": 0.2950, "accuracy": 0.9150, "eval_loss": 0.1400, "eval_accuracy": 0.9580}, 1875),
    ("epoch_loss_equals",  # corpus loss_stagnation__01.log
     "epoch 3 loss = 2.3027005195617676", {"epoch": 3.0, "loss": 2.3027005195617676}, None),
    ("iter_colon_ms",  # corpus loss_stagnation__04.log
     "iter 400: loss 11.0666, time: 19090.34ms, speed: 214 toks/s/device",
     {"loss": 11.0666, "batch_time": 19.09034}, 400),
    ("pipes", "step 100 | loss 2.31 | lr 1e-4", {"loss": 2.31, "learning_rate": 1e-4}, 100),
    ("megatron",  # Megatron-DeepSpeed iteration line (find_string hit)
     " iteration        1/    2500 | consumed samples:           32 | learning rate: 0.000E+00 | "
     "lm loss: 1.065542E+01 | grad norm: 3.250 |",
     {"learning_rate": 0.0, "loss": 10.65542, "grad_norm": 3.25}, 1),
    ("deepspeed_cifar",  # microsoft MS-AMP example log quoted in an issue
     "[2,  2400] loss: 1.209", {"loss": 1.209}, 2400),
    ("lr_with_epoch",  # corpus cuda_oom__04.log
     ">>> Epoch: [1/40] learning rate: 1.00e-03", {"learning_rate": 1e-3, "epoch": 1.0}, None),
    ("tqdm_count_not_epoch",  # samples/undetached_loss_list__tqdm_postfix_growth.log
     "train 1/30:   2%|▏         | 40/1849 [00:12<09:34,  3.15it/s, loss=2.880, gpu_mem=5.7G]",
     {"loss": 2.880, "memory_mb": 5.7 * 1024, "throughput": 3.15}, 40),
    ("cuda_mem_gib",  # samples/undetached_loss_list__eval_loop_growth.log
     "05/14/2023 10:15:19 - INFO - __main__ - step 200 | train_loss 0.8139 | lr 4.833e-05 | "
     "cuda_mem 5.93GiB (max 6.11GiB)",
     {"loss": 0.8139, "learning_rate": 4.833e-05, "memory_mb": 5.93 * 1024}, 200),
    ("mem_alloc_mb", "step 10 loss 2.3611 mem_alloc 1531.1MB", {"memory_mb": 1531.1}, 10),
    ("host_rss", "2024-08-19 02:14:58 [INFO] train: step   400 | loss 5.7882 | imgs/s 4020 | "
     "main+workers RSS 54.4 GiB | MemAvailable 188.1 GiB", {"rss_mb": 54.4 * 1024}, 400),
    ("val_passthrough", "val_f1: 0.81 val_auc=0.93", {"eval_f1": 0.81, "eval_auc": 0.93}, None),
    ("iter_loss",  # a ViT-on-ImageNet issue's log
     "INFO: Epoch : 1/20 - Iter : 6527/6672 - Iter loss : 6.9443 - Iter acc: 0.0052 - "
     "Num correct: 1",
     {"loss": 6.9443, "accuracy": 0.0052, "epoch": 1.0}, 6527),
    ("mmengine_dated",  # the date's 08/03 is no step: the iteration in [1][ 500/2931] is
     "08/03 22:09:24 - mmengine - INFO - Epoch(train)  [1][ 500/2931]  lr: 2.0000e-02  eta: "
     "0:39:15  time: 0.0578  data_time: 0.0017  memory: 2389  loss: 1.2  loss_cls: 0.5",
     {"loss": 1.2, "learning_rate": 0.02}, 500),
    ("key_right_after_a_bracket",  # a print glued to the end of a tqdm bar
     "Epoch 0:   0%|          | 1/1793507 [00:02<1175:20:35,  0.42it/s, v_num=12, "
     "train_loss=10.90]lr=[0.0] mean=-0.000124", {"loss": 10.9, "learning_rate": 0.0}, 1),
    ("cost_is_the_loss",  # a tutorial notebook's log names the loss "Cost"
     "Epoch: 001/010 | Batch 0050/0391 | Cost: 2.2857", {"loss": 2.2857, "epoch": 1.0}, 50),
    ("timing_only",  # a data-loading stall reported without a loss (a GitHub issue's log)
     "load_data_time: 19.6173, train_step_time: 0.686", {"data_time": 19.6173,
                                                          "batch_time": 0.686}, None),
    ("keras_val_dot_loss",  # Keras 0.x with a custom callback: `val. loss`
     "5823/5823 [==============================] - 322s - loss: 678.7651 - val. loss: 91479.6172",
     {"loss": 678.7651, "eval_loss": 91479.6172}, 5823),
    ("chainer_reporter_table_names",  # Chainer's PrintReport columns are reporter keys
     "epoch 3 main/loss 2.30256 validation/main/loss 2.30259 main/accuracy 0.099968",
     {"loss": 2.30256, "eval_loss": 2.30259, "accuracy": 0.099968}, None),
    ("train_and_held_out_accuracy_in_one_line",  # a loguru line: the first is the training's
     "2019-11-22 15:36:56.690 | INFO | train:91 - train_acc=0.991, val_acc=0.500, test_acc=0.533",
     {"accuracy": 0.991, "eval_accuracy": 0.5}, None),
    ("mnist_example_test_line",  # pytorch/examples mnist: the fraction is samples right, no step
     "Test set: Average loss: 0.0335, Accuracy: 9891/10000 (99%)",
     {"eval_loss": 0.0335, "eval_accuracy": 98.91}, None),  # the counts, not the rounded %
    ("qualified_names_padded_with_two_spaces",  # a tab-separated epoch line of a classifier
     "Epoch: 1 \tTraining Loss: 0.0000011422 \tTraining Accuracy: 0.961385 \tValidation Loss: "
     "0.0000030775 \tValidation  Accuracy: 0.978055",
     {"loss": 1.1422e-06, "accuracy": 0.961385, "eval_loss": 3.0775e-06,
      "eval_accuracy": 0.978055}, None),
    ("short_camel_case_names",  # an ESC-50 notes file's tqdm postfix
     "  * 27%|##7       | 54/200 [53:05<2:23:32, 58.99s/ep] TrnAcc=0.045 ValAcc=0.034 "
     "TrnLoss=3.901 ValLoss=3.912 ",
     {"accuracy": 0.045, "eval_accuracy": 0.034, "loss": 3.901, "eval_loss": 3.912}, 54),
    ("gan_losses_by_their_initials",  # a DCGAN's epoch line: neither is the training loss
     "Epoch 00001 |`G Loss: 0.7868 | D Loss: 1.2623 | Time: 22.87s",
     {"g_loss": 0.7868, "d_loss": 1.2623, "loss": None}, None),
    ("misclassified_count_is_the_accuracy_complement",  # a CIFAR script's error count (m4)
     "[TRAIN Epoch 1] Loss: 2.33110598225, Error: 44996/50000",
     {"loss": 2.33110598225, "accuracy": 10.008}, None),
    ("held_out_error_count_with_percent",
     "[TEST] Loss: 2.3364, Error: 9027/10000 (90%)",
     {"eval_loss": 2.3364, "eval_accuracy": 9.73}, None),
    ("opennmt_xent_is_the_loss",  # OpenNMT-py names its cross-entropy `xent`
     "[2018-09-20 15:18:39,264 INFO] Step 380000/1000000; acc:  42.02; ppl: 55.22; xent: 4.01; "
     "lr: 0.00000; 2214/2168 tok/s;    950 sec",
     {"accuracy": 42.02, "loss": 4.01, "learning_rate": 0.0}, 380000),
    ("time_series_library_vali_loss",  # Informer / Autoformer / TimesNet: `Vali Loss`
     "Epoch: 1, Steps: 35 | Train Loss: 1.0262758 Vali Loss: 0.9 Test Loss: 1.1",
     {"epoch": 1.0, "loss": 1.0262758, "eval_loss": 0.9}, None),
]


@pytest.mark.parametrize("text, values, step", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_metric_lines(text: str, values: dict[str, float], step: int | None) -> None:
    record = parse(text)
    assert record is not None
    assert (record.line, record.rank, record.step) == (7, 1, step)
    for name, value in values.items():
        assert record.get(name) == pytest.approx(value), name


def test_running_average_is_not_taken() -> None:
    record = parse("Epoch: [0][10/50]   Time 1.0 (9.0)   Loss 5.0 (7.0)")
    assert record is not None and record.get("loss") == 5.0 and record.get("batch_time") == 1.0


@pytest.mark.parametrize("text, data_avg, batch_avg", [
    ("Epoch: [0][200/5005]\tTime 0.550 (12.315)\tData 0.001 (11.761)\tLoss 6.7401 (6.8409)",
     11.761, 12.315),
    ("iter: 440  loss: 1.0944 (1.3324)  time: 0.6787 (0.7120)  data: 0.4030 (0.4299)  lr: 0.0008",
     0.4299, 0.7120),
    ("Epoch: [0][10/50]   Time 1.0   Data 0.5   Loss 5.0 (7.0)", None, None),
])
def test_time_averages_are_kept_beside_the_current_times(text: str, data_avg, batch_avg) -> None:
    """A log printed every 200 steps shows one step's times; the running average covers all."""
    record = parse(text)
    assert record is not None
    assert record.get("data_time_avg") == data_avg and record.get("batch_time_avg") == batch_avg
    # the loss's running average is kept apart: the loss points stay the current values
    assert record.get("loss") in (6.7401, 1.0944, 5.0)
    assert record.get("loss_avg") in (6.8409, 1.3324, 7.0)


def test_nan_and_inf_values() -> None:
    record = parse("{'loss': nan, 'grad_norm': inf, 'learning_rate': 1e-05, 'epoch': 1.0}")
    assert record is not None
    assert math.isnan(record.get("loss")) and math.isinf(record.get("grad_norm"))
    record = parse("step 5 | loss NaN")
    assert record is not None and math.isnan(record.get("loss"))


NOT_METRICS = [
    "    loss = criterion(out, y)",
    "    loss = 0.0",
    "    running_loss += loss.item()",  # corpus undetached_loss_list__04.log
    '  File "/home/FQ/DenseUAV-main/losses/loss.py", line 65, in forward',  # softmax_overflow__01
    "Saving checkpoint to /ckpt/epoch=3-step=1000-val_loss=0.23.ckpt",
    "learning_rate=5e-05,",  # a TrainingArguments dump line
    "Namespace(batch_size=32, lr=0.001, loss='ce', epochs=10)",
    "[05:21:23.350951] Epoch: [1] Total time: 1:52:15",
    "It always stays the same equal to 2.30",  # corpus loss_stagnation__01.log
    "[loss_scaler.py:181:update_scale] no overflow",
    # settings dumped at start-up, not readings (DeepSpeed's and Megatron's dot leaders, a
    # yacs/mmcv config's loss weight)
    "[2025-10-28 20:49:20,919] [INFO] [config.py:958:print]   float16_config ............... "
    "enabled=False auto_cast=False loss_scale=0.0 initial_scale_power=16",
    "  lr .............................................. 0.00015",
    "  BG_CLS_LOSS_WEIGHT: 0.2",
    "loss_weight=1.0 kl_loss_coef=0.5",
]


def test_records_under_an_epoch_header_take_its_epoch() -> None:
    extractor = MetricExtractor()
    assert not extractor.feed(Line(line=1, text="[2022-06-26 21:44:04,162]Epoch: 0002"))
    record = extractor.feed(Line(line=2, text="loss= 0.8673 accuracy= 0.7422"))[0]
    assert record.get("epoch") == 2.0 and record.get("loss") == 0.8673
    own = extractor.feed(Line(line=3, text="epoch 7 loss 0.5"))[0]
    assert own.get("epoch") == 7.0  # a record's own epoch wins


def test_a_phase_word_before_the_epoch_header_says_which_pass() -> None:
    """ST-GCN's processor: `Training epoch: 5` then `mean_loss: nan`; `Eval epoch: 4` then
    `mean_loss: 5.99` and `Top1: 0.00%`: the same line shape, a training and a held-out
    loss, told apart by the header above them."""
    records = _records([
        "[03.24.23|09:57:51] Eval epoch: 4",
        "[03.24.23|09:58:13] \tmean_loss: 5.9914655685424805",
        "[03.24.23|09:58:13] Done.",
        "[03.24.23|09:58:13] Training epoch: 5",
        "[03.24.23|09:58:33] \tmean_loss: nan",
    ])
    assert [(r.line, r.get("epoch")) for r in records] == [(2, 4.0), (5, 5.0)]
    assert records[0].get("eval_loss") == pytest.approx(5.99146557)
    assert records[0].get("loss") is None and records[1].get("eval_loss") is None


def test_a_progress_share_is_no_step() -> None:
    """simpletransformers' `Current iteration:  70%|███| 1321/1875 [...]Running loss: 0.49`:
    70 is the bar's percentage; the step is the count after it."""
    record = parse("Current iteration:  70%|███████   | 1321/1875 [09:50<04:06,  2.25it/s]"
                   "Running loss: 0.496334")
    assert record is not None and record.step == 1321 and record.get("loss") == 0.496334


def test_a_time_cost_is_a_duration_not_the_loss() -> None:
    record = parse("epoch 3, time cost: 12.3s, acc: 0.5")
    assert record is not None and record.get("accuracy") == 0.5 and record.get("loss") is None


@pytest.mark.parametrize("text", NOT_METRICS)
def test_not_metrics(text: str) -> None:
    assert parse(text) is None


@pytest.mark.parametrize("name, expected", [
    ("loss", "loss"), ("train_loss", "loss"), ("closs", "loss"), ("lm loss", "loss"),
    ("train/loss", "loss"), ("total_loss", "loss"), ("loss_total", "loss"),
    ("val_loss", "eval_loss"), ("eval_loss", "eval_loss"), ("val/loss", "eval_loss"),
    ("lr", "learning_rate"), ("learning rate", "learning_rate"), ("gnorm", "grad_norm"),
    ("acc", "accuracy"), ("Prec@1", "accuracy"), ("val_acc", "eval_accuracy"),
    ("eval_matthews_correlation", "eval_matthews_correlation"), ("max mem", "memory_mb"),
    ("Data", "data_time"), ("time", "batch_time"), ("cls_loss", "cls_loss"), ("v_num", None),
    ("speed", None), ("loss_weight", None), ("aux_loss_weight", None), ("lambda_loss", None),
    ("loss_scale", "loss_scale"), ("loss_rpn_cls", "loss_rpn_cls"), ("w_loss", "w_loss"),
    ("initial loss", None), ("final loss", None), ("best_val_loss", None),
    ("losses", "loss"), ("rpn_cls", "loss_rpn_cls"), ("rcnn_box", "loss_rcnn_box"),
    ("obj", "loss_obj"), ("iou", "iou"), ("rpn", None), ("cls_token", None),
    # when and how much to evaluate, from a config dump: settings, not measurements
    ("eval_every", None), ("eval_tokens", None), ("val_batch_size", None),
    ("eval_steps", None), ("val_interval", None), ("eval_ppl", "eval_ppl"),
])
def test_normalise(name: str, expected: str | None) -> None:
    assert normalise(name) == expected


def _records(lines: list[str]) -> list:
    from minrepro.diagnose.extract.metrics import MetricExtractor

    extractor = MetricExtractor()
    return [r for n, text in enumerate(lines, 1) for r in extractor.feed(Line(n, text))]


def test_a_markdown_table_of_epochs() -> None:
    """A CenterNet issue's table: one record a row, named by the header."""
    records = _records(["When I train, val loss becomes larger and larger", "",
                        "| epoch | train loss | val loss |", "| :------| ------: | :------: |",
                        "| 5 | 2.24 | 2.89 |", "| 10 | 1.86 | 2.88 |", "| 15 | 1.77 | 2.90 |",
                        "This is even more severe on my own task."])
    assert [(r.get("epoch"), r.get("loss"), r.get("eval_loss")) for r in records] == [
        (5.0, 2.24, 2.89), (10.0, 1.86, 2.88), (15.0, 1.77, 2.90)]


TRAINER_STATE = """{
  "best_metric": null,
  "epoch": 19.995245641838352,
  "log_history": [
    {
      "epoch": 0.32,
      "learning_rate": 7.911392405063292e-06,
      "loss": 1.387,
      "step": 50
    },
    {
      "epoch": 0.32,
      "eval_accuracy": 0.25503355264663696,
      "eval_loss": NaN,
      "step": 50
    }
  ]
}"""


def test_a_json_object_printed_one_key_a_line_is_one_record() -> None:
    """HF's trainer_state.json: each entry of log_history is a record at its first key's
    line; the top-level object (a nested list in it) is none."""
    records = _records(TRAINER_STATE.splitlines())
    assert [(r.line, r.step) for r in records] == [(6, 50), (12, 50)]
    assert records[0].get("loss") == 1.387 and records[0].get("learning_rate") > 0
    assert math.isnan(records[1].get("eval_loss")) and records[1].get("loss") is None


def test_a_settings_object_printed_one_key_a_line_is_no_record() -> None:
    """DeepSpeed prints its user config as JSON at start-up: `"loss_scale": 0` there means
    dynamic scaling, no measured scale; an object without a step or epoch is no record."""
    dump = ['[2022-10-29 00:42:11,295] [INFO] [config.py:967:print_user_config]   json = {',
            '    "train_batch_size": 256, ', '    "fp16": {', '        "enabled": true, ',
            '        "loss_scale": 0, ', '        "loss_scale_window": 500, ',
            '        "min_loss_scale": 1', '    }, ', '    "gradient_clipping": 1.0', '}']
    assert _records(dump) == []


def test_fastais_table_with_a_duration_column() -> None:
    """fastai's (and tsai's) progress table, pasted: a `time` column of `00:01` durations."""
    records = _records(["epoch | train_loss | valid_loss | mae | _rmse | time",
                        "-- | -- | -- | -- | -- | --",
                        "0 | nan | nan | nan | nan | 00:01", "1 | 0.52 | 0.61 | 0.4 | 0.5 | 01:12"])
    assert [(r.get("epoch"), r.get("eval_loss")) for r in records][1:] == [(1.0, 0.61)]
    assert math.isnan(records[0].get("loss")) and records[1].get("batch_time") is None


def test_csv_metrics_with_empty_cells() -> None:
    """Lightning's CSVLogger: a training row and an evaluation row per step, each empty where
    the other's columns are."""
    records = _records(["epoch,step,train_loss,val_loss,val_acc", "0,49,0.6931,,",
                        "0,49,,0.6930,0.5", "1,99,0.6931,,", "1,99,,0.6931,0.5"])
    assert [(r.get("epoch"), r.step, r.get("loss"), r.get("eval_loss")) for r in records] == [
        (0.0, 49, 0.6931, None), (0.0, 49, None, 0.693), (1.0, 99, 0.6931, None),
        (1.0, 99, None, 0.6931)]


def test_a_decorated_csv_header_over_tab_separated_rows() -> None:
    records = _records(["Epoch: 01 | Epoch Time: 0m 57s",
                        "*******train_loss,train_acc,valid_loss,valid_acc**********",
                        "5.2009\t2.7902\t4.9771\t3.6058"])
    assert [(r.get("loss"), r.get("eval_loss"), r.get("eval_accuracy")) for r in records] == [
        (5.2009, 4.9771, 3.6058)]
    # a sentence with commas is no header
    assert _records(["we tried loss,accuracy and more", "1,2"]) == []


def test_a_whitespace_table_with_steps_and_percentages() -> None:
    records = _records(["step    loss    val_acc", "100     2.30    10.2%", "200     2.31    9.8%",
                        "step 300 done"])
    assert [(r.step, r.get("loss"), r.get("eval_accuracy")) for r in records] == [
        (100, 2.30, 10.2), (200, 2.31, 9.8)]


@pytest.mark.parametrize("header, lines", [
    ("| Name | Type | Params |", []),  # Lightning's model summary
    ("step 100 | loss 2.31 | lr 1e-4", [1]),  # a metric line itself, not a header
    ("| epoch | comment |", []),  # one known column is no metrics table
])
def test_not_table_headers(header: str, lines: list[int]) -> None:
    assert [r.line for r in _records([header, "| 1 | 2 | 3 |", "| 4 | 5 | 6 |"])] == lines


def test_a_bracketed_pair_is_no_value_of_the_key_before_it() -> None:
    """`Loss [1, 100](epoch, minibatch): 9.66`: [1, 100] is (epoch, batch), not a loss of 1
    (a run whose loss falls 9.7 -> 3.6 read as one climbing 1 -> 6); `[0.5]` is a value."""
    assert parse("Loss [1, 100](epoch, minibatch):  9.65963740825653") is None or (
        parse("Loss [1, 100](epoch, minibatch):  9.65963740825653").get("loss") != 1.0)
    record = parse("epoch 3 val_loss: [0.123] lr: 0.01")
    assert record is not None and record.get("eval_loss") == 0.123


@pytest.mark.parametrize("text, expected", [
    ("INFO:Trainer:Epoch [3/30] Train: 0.0548 | Val: 0.0499 | 417.0s | LR: 0.001000",
     {"loss": 0.0548, "eval_loss": 0.0499}),
    ("Epoch 001/35 | Train: 0.6856 | Val: 0.4314", {"loss": 0.6856, "eval_loss": 0.4314}),
    # a count after the phase, a metric named before it, a share: no loss
    ("Train 3, loss: 1.98, train acc: 0.74", {"loss": 1.98}),
    ("Class 0: Top-k Acc -> Train: 0.937, Val: 0.917", {}),
    ("Train: 95.2% | Val: 93.1%", {}),
])
def test_a_phase_named_alone_before_a_decimal_is_its_loss(text: str, expected: dict) -> None:
    record = parse(text)
    got = {k: v for k, v in (record.values if record else ()) if k in ("loss", "eval_loss")}
    assert got == expected



@pytest.mark.parametrize("text", [
    "Loading EveryVoice modules: 100%|██████████| 4/4 [00:15<00:00,  3.85s/it]",
    "Loading checkpoint shards: 100%|██████████| 3/3 [00:05<00:00,  1.84s/it]",
    "Downloading (…)model.safetensors: 100%|██████████| 2/2 [00:30<00:00, 15.1s/it]",
    "Map (num_proc=4): 100%|██████████| 400/400 [00:15<00:00,  26.5it/s]",
    "Tokenizing train split: 100%|██████████| 9/9 [00:01<00:00,  7.2it/s]",
])
def test_a_set_up_tasks_progress_bar_is_no_training_record(text: str) -> None:
    """Other ranks load their modules while one has already failed: their bars are no step."""
    assert not MetricExtractor().feed(Line(line=1, text=text))


def test_a_training_bars_rate_is_kept_whatever_its_description() -> None:
    for text in ("100%|██████████| 400/400 [00:15<00:00,  3.85it/s]",
                 "Training: 100%|██████████| 400/400 [00:15<00:00,  3.85it/s]",
                 "Epoch 3: 100%|██████████| 4/4 [00:15<00:00,  3.85s/it, loss=0.5]"):
        (record,) = MetricExtractor().feed(Line(line=1, text=text))
        assert record.get("throughput") is not None


def test_a_failure_then_other_ranks_loading_bars_is_still_the_end_of_the_run() -> None:
    """d8 cuda_oom__01's shape: the OOM, then the other ranks' set-up bars, then srun's exits."""
    from tests.test_failures import diagnose
    oom = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 2 has a"
           " total capacity of 15.78 GiB of which 27.19 MiB is free.")
    bars = "\n".join(f"Loading modules: 100%|██████████| 4/4 [00:15<00:00,  3.{n}5s/it]"
                     for n in range(4))
    diagnosis = diagnose(f"{oom}\n{bars}\nsrun: error: node-2: task 4: Exited with exit code 1\n")
    assert diagnosis.cause == "cuda_oom"
