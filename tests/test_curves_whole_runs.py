"""Curve checks on whole, noisy runs: seeded generators of realistic healthy logs must give no
cause at all; the same logs with a real failure in them must give that failure.

Each generator writes the lines a training loop prints (per-batch noise, warmup, lr step
decay, epoch boundaries with a step counter that restarts, eval every N steps), and the
whole diagnose path reads them.
"""

from __future__ import annotations

import math
import random

import pytest

from minrepro.diagnose.pipeline import diagnose_lines
from minrepro.model import Line

SEEDS = range(6)


def diagnose(rows: list[str]):
    return diagnose_lines([Line(line=n, text=row) for n, row in enumerate(rows, 1)])


def healthy_loss(step: int, total: int, rng: random.Random, start: float = 4.0,
                 floor: float = 0.4) -> float:
    """Warmup, then exponential decay with lr step drops, times per-batch noise."""
    progress = step / total
    level = floor + (start - floor) * math.exp(-4 * progress)
    level *= 0.85 if progress > 0.6 else 1.0  # the lr drop at 60 %
    if step < total * 0.02:
        level = start * (1 + 0.1 * rng.random())  # warmup: high and jumpy
    return level * math.exp(rng.gauss(0, 0.25))  # per-batch noise, heavy tailed


def imagenet_style(seed: int, epochs: int = 12, batches: int = 200, eval_rise: bool = False,
                   acc_down: bool = False) -> list[str]:
    """pytorch/examples lines: per-batch 'Epoch: [e][i/N]', eval passes, ' * Acc@1' summaries."""
    rng = random.Random(seed)
    rows, total = [], epochs * batches
    for epoch in range(epochs):
        for i in range(0, batches, 10):
            loss = healthy_loss(epoch * batches + i, total, rng)
            rows.append(f"Epoch: [{epoch}][{i:4d}/{batches}]\tTime 0.210 (0.230)\t"
                        f"Data 0.010 (0.020)\tLoss {loss:.4f} ({loss * 1.05:.4f})")
        val = 2.0 * math.exp(-epoch / 3) + 0.9 + rng.gauss(0, 0.03)
        if eval_rise and epoch > epochs // 3:
            val += 0.25 * (epoch - epochs // 3)
        acc = 40 + 45 * (1 - math.exp(-epoch / 3)) + rng.gauss(0, 0.3)
        if acc_down and epoch > epochs // 3:
            acc -= 2.0 * (epoch - epochs // 3)
        for j in range(0, 50, 10):
            rows.append(f"Test: [{j:3d}/50]\tTime 0.100 (0.110)\tLoss {val + rng.gauss(0, 0.3):.4f}"
                        f" ({val:.4f})\tAcc@1 {acc + rng.gauss(0, 5):.3f} ({acc:.3f})")
        rows.append(f" * Acc@1 {acc:.3f} Acc@5 {min(99.0, acc + 10):.3f}")
    return rows


def hf_trainer_style(seed: int, steps: int = 3000, every: int = 10, evals: int = 300,
                     start: float = 2.1, floor: float = 1.9) -> list[str]:
    """HF Trainer dict lines; an SFT loss that plateaus naturally (1.92: near ln 7)."""
    rng = random.Random(seed)
    rows = []
    for step in range(every, steps + 1, every):
        loss = healthy_loss(step, steps, rng, start=start, floor=floor) ** 0.3 * floor ** 0.7
        lr = 2e-5 * min(1.0, step / 300) * (1 - step / steps)
        rows.append(f"{{'loss': {loss:.4f}, 'grad_norm': {abs(rng.gauss(1.0, 0.3)):.4f}, "
                    f"'learning_rate': {lr:.3e}, 'epoch': {step / steps * 3:.2f}}}")
        if step % evals == 0:
            rows.append(f"{{'eval_loss': {floor + 0.05 + rng.gauss(0, 0.01):.4f}, "
                        f"'epoch': {step / steps * 3:.2f}}}")
    rows.append("{'train_runtime': 5123.4, 'train_samples_per_second': 12.1, 'epoch': 3.0}")
    return rows


def deepspeed_fp16_style(seed: int, steps: int = 4000) -> list[str]:
    """A burst of loss-scale reductions at start-up, then a probe every ~1000 steps."""
    rng = random.Random(seed)
    rows = []
    scale = 65536
    for _ in range(6):
        rows.append("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
                    f"{scale}, reducing to {scale // 2}")
        scale //= 2
    for step in range(1, steps):
        if step % 1000 == 0:
            rows.append("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
                        "65536, reducing to 32768")
        if step % 20 == 0:
            loss = healthy_loss(step, steps, rng)
            rows.append(f"[Rank 0] step={step}, skipped={7 + step // 1000}, lr=[1e-05], "
                        f"loss={loss:.4f}")
    return rows


def gan_style(seed: int, iterations: int = 400) -> list[str]:
    rng = random.Random(seed)
    return [f"Discriminator Loss: {abs(rng.gauss(0.9, 0.6)):.8f} Generator Loss: "
            f"{abs(rng.gauss(2.2, 1.1)):.8f}: {i * 100 // iterations}%|##| {i}/{iterations}"
            for i in range(iterations)]


def appended_runs(seed: int) -> list[str]:
    """Three detectron2 runs in one file: the loss starts high again at each."""
    rng = random.Random(seed)
    rows = []
    for _ in range(3):
        for it in range(19, 4000, 20):
            loss = healthy_loss(it, 4000, rng, start=110.0, floor=20.0)
            rows.append(f"[08/30 23:20:28] d2.utils.events INFO:  eta: 1:11:19  iter: {it}  "
                        f"total_loss: {loss:.4g}  lr: 0.0001")
    return rows


def resumed_on_its_plateau(seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"Train Epoch: {epoch} [{i}/496 ({i * 100 // 496}%)] Loss: "
            f"{9.95 + rng.gauss(0, 0.02):.6f}" for epoch in range(51, 60)
            for i in range(0, 496, 8)]


def per_sample_losses(seed: int, batches: int = 80) -> list[str]:
    """Batch size 1 (crowd counting, detection): each logged loss is one sample's, scattered
    over two orders of magnitude (0.3 ... 100) around a level that does not move."""
    rng = random.Random(seed)
    rows, total = [], 0.0
    for i in range(batches):
        value = rng.lognormvariate(1.2, 1.1)
        total += value
        rows.append(f"Epoch [18][{i}/4804] Time/b 1.52 (1.50) Loss {value:.4f} "
                    f"({total / (i + 1):.3f})")
    return rows


HEALTHY = {
    "imagenet": imagenet_style,
    "imagenet-val-loss-up-acc-up": lambda s: imagenet_style(s, eval_rise=True),
    "hf-sft-plateau": hf_trainer_style,
    "deepspeed-fp16-probing": deepspeed_fp16_style,
    "gan": gan_style,
    "appended-runs": appended_runs,
    "resumed-plateau": resumed_on_its_plateau,
    "per-sample-losses": per_sample_losses,
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", HEALTHY)
def test_healthy_noisy_runs_get_no_cause(kind: str, seed: int) -> None:
    diagnosis = diagnose(HEALTHY[kind](seed))
    assert diagnosis.cause is None, (kind, seed, diagnosis.cause, diagnosis.confidence)


@pytest.mark.parametrize("seed", SEEDS)
def test_overfitting_with_a_worsening_metric(seed: int) -> None:
    diagnosis = diagnose(imagenet_style(seed, eval_rise=True, acc_down=True))
    assert diagnosis.cause == "overfitting"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_loss_that_turns_nan_and_stays_nan(seed: int) -> None:
    rows = imagenet_style(seed, epochs=4)
    rows += [f"Epoch: [4][{i:4d}/200]\tTime 0.2 (0.2)\tData 0.0 (0.0)\tLoss nan (nan)"
             for i in range(0, 200, 10)]
    assert diagnose(rows).cause == "lr_divergence"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_single_nan_eval_that_recovers_is_no_divergence(seed: int) -> None:
    rows = hf_trainer_style(seed)
    rows.insert(len(rows) // 3, "{'eval_loss': nan, 'epoch': 1.0}")
    assert diagnose(rows).cause is None


@pytest.mark.parametrize("seed", SEEDS)
def test_a_loss_that_climbs_back_and_stays(seed: int) -> None:
    rng = random.Random(seed)
    rows = [f"step {s} | loss {healthy_loss(s, 2000, rng) * (1 if s < 1200 else 10):.4f} | "
            f"lr 0.1" for s in range(0, 2000, 10)]
    assert diagnose(rows).cause == "lr_divergence"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_loss_that_got_worse_than_it_began_over_its_noise(seed: int) -> None:
    rng = random.Random(seed)
    rows = [f"step {i} loss {2.3 + 1.2 * i / 100 + rng.gauss(0, 0.1):.4f} lr 0.1"
            for i in range(100)]
    assert diagnose(rows).cause == "lr_divergence"


@pytest.mark.parametrize("seed", SEEDS)
def test_stuck_at_ln_10_with_accuracy_at_chance(seed: int) -> None:
    rng = random.Random(seed)
    rows = [f"epoch {e} train loss {math.log(10) + rng.gauss(0, 0.002):.4f} train acc "
            f"{10 + rng.gauss(0, 0.3):.2f} val loss {math.log(10) + rng.gauss(0, 0.001):.4f}"
            f" val acc 10.00" for e in range(50)]
    diagnosis = diagnose(rows)
    assert diagnosis.cause == "loss_stagnation" and diagnosis.params["num_classes"] == 10


@pytest.mark.parametrize("seed", SEEDS)
def test_stuck_a_little_above_ln_10_with_errors_counted(seed: int) -> None:
    """Ten short epochs at 2.33 (a little above ln 10 = 2.303) and nine samples in ten
    misclassified, printed as a count of errors: chance level, so no learning."""
    rng = random.Random(seed)
    rows = []
    for epoch in range(1, 11):
        rows.append(f"[TRAIN Epoch {epoch}] Loss: {2.331 + rng.gauss(0, 0.0004):.11f}, "
                    f"Error: {45000 + rng.randint(-30, 30)}/50000")
        wrong = 9025 + rng.randint(-10, 10)
        rows.append(f"[TEST] Loss: {2.335 + rng.gauss(0, 0.001):.4f}, Error: {wrong}/10000 "
                    f"({round(wrong / 100)}%)")
    diagnosis = diagnose(rows)
    assert diagnosis.cause == "loss_stagnation" and diagnosis.params["num_classes"] == 10


@pytest.mark.parametrize("seed", SEEDS)
def test_errors_counted_falling_is_learning(seed: int) -> None:
    """The same print of a run that learns: errors fall from 90 % to 30 %."""
    rng = random.Random(seed)
    rows = []
    for epoch in range(1, 11):
        loss = 2.3 * math.exp(-epoch / 6) + rng.gauss(0, 0.01)
        rows.append(f"[TRAIN Epoch {epoch}] Loss: {loss:.6f}, "
                    f"Error: {int(45000 * math.exp(-epoch / 9))}/50000")
    assert diagnose(rows).cause is None


@pytest.mark.parametrize("seed", SEEDS)
def test_an_earlier_launchs_nan_in_an_appended_log_is_history(seed: int) -> None:
    """ST-GCN appends every launch to one log.txt: a first launch whose training loss was NaN
    every epoch (its evaluations finite), then launches that train. The run the log ends
    with is healthy."""
    rng = random.Random(seed)
    rows = ["Parameters:", "{'base_lr': 0.1, 'num_epoch': 50}"]
    for epoch in range(10):
        rows += [f"Training epoch: {epoch}", "\tmean_loss: nan", "Done."]
        if epoch % 5 == 4:
            rows += [f"Eval epoch: {epoch}", "\tmean_loss: 5.9914655685424805",
                     "\tTop1: 0.00%", "Done."]
    for _ in range(3):  # relaunched after a fix: each starts again at epoch 0
        rows += ["Parameters:", "{'base_lr': 0.01, 'num_epoch': 50}"]
        for epoch in range(8):
            loss = 4.0 * math.exp(-epoch / 5) * math.exp(rng.gauss(0, 0.05))
            rows += [f"Training epoch: {epoch}", f"\tmean_loss: {loss}", "Done."]
    assert diagnose(rows).cause is None


@pytest.mark.parametrize("seed", SEEDS)
def test_a_per_batch_snippet_from_mid_run_is_not_a_run_that_got_worse(seed: int) -> None:
    """Thirteen per-batch losses pasted from step 1321 (0.40 to 1.74): batch noise, not a
    run that rose above where it began (it began long before the snippet)."""
    rng = random.Random(seed)
    rows = [f"Current iteration:  {70 + i // 20}%|███████   | {1321 + i}/1875 [09:50<04:06,  "
            f"2.25it/s]Running loss: {0.5 if i == 0 else 0.8 * math.exp(rng.gauss(0, 0.4)):.6f}"
            for i in range(13)]
    assert diagnose(rows).cause is None


@pytest.mark.parametrize("seed", SEEDS)
def test_a_resumed_run_on_its_held_out_plateau_is_weak(seed: int) -> None:
    """A segmentation run resumed at epoch 48 after early epochs elsewhere: 25 epochs of the
    same validation loss and dice are a model that has converged, not one that never
    learned."""
    rng = random.Random(seed)
    rows = [f"Epoch: {e} | Train_loss: {0.50 + rng.gauss(0, 0.01):.5f} | Val loss: "
            f"{0.572 + rng.gauss(0, 0.002):.5f} | val dice: {0.85 + rng.gauss(0, 0.002):.5f}"
            for e in range(48, 73)]
    assert diagnose(rows).cause is None


@pytest.mark.parametrize("seed", SEEDS)
def test_memorising_with_a_wandering_held_out_accuracy_is_overfitting(seed: int) -> None:
    """Keras-style epochs: training loss 0.17 -> 0.03 and accuracy 0.95 -> 0.99 while the
    validation loss climbs 2.2 -> 3.8 and validation accuracy wanders 0.64-0.70: the model
    memorises its training set; the wandering accuracy is no sign that it still improves."""
    rng = random.Random(seed)
    rows = []
    for epoch in range(1, 31):
        progress = epoch / 30
        rows += [f"Epoch {epoch}/100",
                 f" - 560s - loss: {0.17 * (1 - 0.82 * progress):.4f} - acc: "
                 f"{0.945 + 0.045 * progress:.4f} - val_loss: "
                 f"{2.2 + 1.6 * progress + rng.gauss(0, 0.12):.4f} - val_acc: "
                 f"{0.67 + rng.uniform(-0.03, 0.03):.4f}"]
    diagnosis = diagnose(rows)
    assert diagnosis.cause == "overfitting"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_run_that_finished_memorising_its_training_set_is_overfitting(seed: int) -> None:
    """torchvision's fine-tuning tutorial's output: training loss 0.49 -> 0.02 while the
    validation loss climbs 0.47 -> 0.88 and accuracy holds; then "Training complete". An
    overfitting run trains to its end: its finishing is no evidence against it."""
    rng = random.Random(seed)
    rows = []
    for epoch in range(24):
        progress = min(epoch / 8, 1.0)
        rows += [f"Epoch {epoch}/23", "----------",
                 f"train Loss: {0.49 - 0.47 * progress + rng.uniform(0, 0.005):.4f} Acc: "
                 f"{0.78 + 0.21 * progress:.4f}",
                 f"val Loss: {0.47 + 0.4 * min(epoch / 12, 1.0) + rng.gauss(0, 0.02):.4f} "
                 f"Acc: {0.785 + rng.uniform(-0.01, 0.01):.4f}", ""]
    rows += ["Training complete in 26m 32s", "Best val Acc: 0.795771"]
    assert diagnose(rows).cause == "overfitting"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_tiny_summed_loss_beside_a_learning_accuracy_is_no_collapse(seed: int) -> None:
    """A loss printed as 1e-6 .. 1e-7 (a sum divided by a large count) while training
    accuracy climbs 0.96 -> 0.995: a mean cross-entropy could not be that small with one
    sample in 200 wrong, so it is no loss collapsed to zero."""
    rng = random.Random(seed)
    rows = [f"Epoch: {e} \tTraining Loss: "
            f"{1.1e-6 * math.exp(-e / 50) * (1 + rng.gauss(0, 0.05)):.10f}"
            f" \tTraining Accuracy: {0.96 + 0.035 * e / 100:.6f} \tValidation Loss: "
            f"{3e-6 * (1 + rng.gauss(0, 0.05)):.10f} \tValidation  Accuracy: "
            f"{0.975 + rng.uniform(0, 0.015):.6f}" for e in range(1, 101)]
    assert diagnose(rows).cause is None


@pytest.mark.parametrize("seed", SEEDS)
def test_a_trainer_state_json_stuck_at_ln_4_is_stagnation(seed: int) -> None:
    """HF's trainer_state.json of a 4-way multiple-choice run: every evaluation at
    eval_loss 1.3863 (ln 4) and eval_accuracy near 0.25, one key a line."""
    rng = random.Random(seed)
    rows = ["{", '  "best_metric": null,', '  "log_history": [']
    for step in range(50, 2050, 50):
        rows += ["    {", f'      "epoch": {step / 157:.2f},',
                 f'      "learning_rate": {2e-5 * (1 - step / 2100):.6e},',
                 f'      "loss": {1.3863 + abs(rng.gauss(0, 0.008)):.4f},', f'      "step": {step}',
                 "    },", "    {", f'      "epoch": {step / 157:.2f},',
                 f'      "eval_accuracy": {0.25 + rng.uniform(0, 0.05):.6f},',
                 f'      "eval_loss": {math.log(4) + rng.gauss(0, 2e-5):.10f},',
                 f'      "step": {step}', "    },"]
    rows += ["  ]", "}"]
    diagnosis = diagnose(rows)
    assert diagnosis.cause == "loss_stagnation" and diagnosis.params["num_classes"] == 4


@pytest.mark.parametrize("seed", SEEDS)
def test_fp16_scale_that_never_recovers(seed: int) -> None:
    rows = deepspeed_fp16_style(seed, steps=1000)[:6]
    scale = 2048
    while scale > 1:
        rows.append(f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {scale},"
                    f" reducing to {scale // 2}")
        scale //= 2
    assert diagnose(rows).cause == "fp16_overflow"


def test_every_step_skipped_is_fp16_overflow() -> None:
    rows = [f"[Rank 0] step={s}, skipped={s}, lr=[1e-05]" for s in range(10, 2000, 10)]
    assert diagnose(rows).cause == "fp16_overflow"


def test_the_crash_at_the_end_outweighs_a_curve_before_it() -> None:
    rows = imagenet_style(1, eval_rise=True, acc_down=True)
    rows += ["Traceback (most recent call last):", '  File "train.py", line 300, in <module>',
             "    save(model)", "OSError: [Errno 28] No space left on device"]
    assert diagnose(rows).cause is None
