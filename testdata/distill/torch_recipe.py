"""The issue's distillation recipe in PyTorch, the peer of lib/distill's training.

Usage: torch_recipe.py DIR
       torch_recipe.py --seeds FIRST LAST DIR
       torch_recipe.py --bench THREADS RUNS DIGITS_CSV_GZ

DIR holds what lib/distill's tests wrote, as .npy files: train_x, train_y, test_x,
test_y (the digits split: float32 features, int64 labels) and recipe.json (lr,
batch_size, temperature, alpha, epochs).

With DIR alone (TestPeerTorchRecipe) DIR also holds the initial parameters of the
teacher and the student (teacher.N.weight / teacher.N.bias / student.N..., in
nn.Linear's layout), the rows' order of every epoch (teacher_order,
student_order: [epochs, rows]) and the student's soft targets (soft_targets:
softmax(teacher logits / T) of the training rows). Both models are trained from
those parameters in that order, so PyTorch takes the same steps as apr. Written
back into DIR: the parameters after ten steps (PREFIX_s10.N.weight/.bias), after
the first epoch (PREFIX_e1...) and at the end (PREFIX_final...), the logits of the
test rows (PREFIX_test_logits) and version.json.

With --seeds (TestDigitsSeeds) PyTorch draws everything itself: for each seed s
from FIRST to LAST, torch.manual_seed(s) for a 64-128-128-10 teacher and s + 1 for a
64-16-16-10 student distilled from it and for the same student trained without a
teacher; one JSON line per seed with the test accuracies and agreements.

With --bench (.ci/bench-distill) it reads the digits CSV itself (the first 1347
rows, the size of the training split, scaled to [0, 1]) and times, on THREADS
threads, what lib/distill's Go benchmarks time, RUNS times each: 10-epoch runs of fitting the teacher, of
distilling the student (the teacher's soft targets computed once per run, as apr
does) and of fitting the student, each with a final prediction pass over the
training rows; and predicting 1 and 1024 rows. It prints one JSON object of
medians: ms per epoch and samples per second.

The recipe: the teacher fitted on cross-entropy; the student distilled with
alpha * T^2 * KLDivLoss(batchmean) of the soft targets plus (1 - alpha) *
cross-entropy; Adam with PyTorch's defaults; mini-batches in a fresh order every
epoch, the last short batch kept.
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

mode, d = sys.argv[1] if sys.argv[1].startswith("--") else "", sys.argv[-1]
torch.set_num_threads(int(sys.argv[2]) if mode == "--bench" else 1)


def load(name):
    return torch.from_numpy(np.load(os.path.join(d, name + ".npy")))


def save(name, t):
    np.save(os.path.join(d, name + ".npy"), t.detach().numpy())


if mode == "--bench":
    recipe = {"lr": 1e-3, "batch_size": 32, "temperature": 3.0, "alpha": 0.7}
    digits = np.loadtxt(d, delimiter=",", dtype=np.float32)
    x_train = torch.from_numpy(digits[:1347, :64] / 16)
    y_train = torch.from_numpy(digits[:1347, 64].astype(np.int64))
else:
    recipe = json.load(open(os.path.join(d, "recipe.json")))
    x_train, y_train = load("train_x"), load("train_y")
    x_test, y_test = load("test_x"), load("test_y")


def relu_net(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers += [torch.nn.Linear(widths[i], widths[i + 1]), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])  # logits out: softmax is in the loss


def dense(net):
    return [m for m in net if isinstance(m, torch.nn.Linear)]


def train(net, orders, soft=None, checkpoint=lambda epoch, step: None):
    opt = torch.optim.Adam(net.parameters(), lr=recipe["lr"])
    t, alpha, bs = recipe["temperature"], recipe["alpha"], recipe["batch_size"]
    for epoch, order in enumerate(orders):
        for step, start in enumerate(range(0, len(order), bs)):
            rows = order[start:start + bs]
            z = net(x_train[rows])
            loss = F.cross_entropy(z, y_train[rows])
            if soft is not None:
                kl = F.kl_div(F.log_softmax(z / t, dim=1), soft[rows], reduction="batchmean")
                loss = alpha * t * t * kl + (1 - alpha) * loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            checkpoint(epoch, step)
    return net


def predict(net, x):
    with torch.no_grad():
        return net(x).argmax(1)


def rate(a, b):
    return (a == b).double().mean().item()


def same_steps():
    """Train from apr's parameters in apr's order; write the checkpoints."""
    def network(prefix):
        layers = []
        while os.path.exists(os.path.join(d, "%s.%d.weight.npy" % (prefix, len(layers)))):
            layers.append((load("%s.%d.weight" % (prefix, len(layers))), load("%s.%d.bias" % (prefix, len(layers)))))
        net = relu_net([layers[0][0].shape[1]] + [w.shape[0] for w, _ in layers])
        with torch.no_grad():
            for m, (w, b) in zip(dense(net), layers):
                m.weight.copy_(w)
                m.bias.copy_(b)
        return net

    def save_params(prefix, net):
        for i, m in enumerate(dense(net)):
            save("%s.%d.weight" % (prefix, i), m.weight)
            save("%s.%d.bias" % (prefix, i), m.bias)

    for prefix, soft in (("teacher", None), ("student", load("soft_targets"))):
        net = network(prefix)

        def checkpoint(epoch, step):
            if epoch == 0 and step == 9:
                save_params(prefix + "_s10", net)
            if epoch == 0 and (step + 1) * recipe["batch_size"] >= len(x_train):
                save_params(prefix + "_e1", net)

        train(net, load(prefix + "_order"), soft, checkpoint)
        save_params(prefix + "_final", net)
        with torch.no_grad():
            save(prefix + "_test_logits", net(x_test))
    json.dump({"torch": torch.__version__}, open(os.path.join(d, "version.json"), "w"))


def own_seeds():
    """PyTorch's own initialisation and shuffling, one JSON line per seed."""
    epochs, t = recipe["epochs"], recipe["temperature"]

    def orders(seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randperm(len(x_train), generator=g) for _ in range(epochs))

    for s in range(int(sys.argv[2]), int(sys.argv[3]) + 1):
        torch.manual_seed(s)
        teacher = train(relu_net([64, 128, 128, 10]), orders(s))
        with torch.no_grad():
            soft = F.softmax(teacher(x_train) / t, dim=1)
        torch.manual_seed(s + 1)
        student = train(relu_net([64, 16, 16, 10]), orders(s + 1), soft)
        torch.manual_seed(s + 1)
        scratch = train(relu_net([64, 16, 16, 10]), orders(s + 1))
        tp, sp, cp = predict(teacher, x_test), predict(student, x_test), predict(scratch, x_test)
        print(json.dumps({"seed": s, "teacher": rate(tp, y_test), "distilled": rate(sp, y_test),
                          "agreement": rate(sp, tp), "scratch": rate(cp, y_test),
                          "scratch_agreement": rate(cp, tp)}), flush=True)


def bench():
    """Medians of RUNS timings of what lib/distill's benchmarks time."""
    runs, epochs, t = int(sys.argv[3]), 10, recipe["temperature"]
    torch.manual_seed(1)
    teacher = relu_net([64, 128, 128, 10])

    def orders():
        return (torch.randperm(len(x_train)) for _ in range(epochs))

    def fit(widths):
        predict(train(relu_net(widths), orders()), x_train)

    def distil():
        with torch.no_grad():
            soft = F.softmax(teacher(x_train) / t, dim=1)
        predict(train(relu_net([64, 16, 16, 10]), orders(), soft), x_train)

    def median_seconds(f, repeat=1):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            for _ in range(repeat):
                f()
            times.append((time.perf_counter() - start) / repeat)
        return statistics.median(times)

    out = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    for name, f in (("fit_teacher", lambda: fit([64, 128, 128, 10])), ("distill_student", distil),
                    ("fit_student", lambda: fit([64, 16, 16, 10]))):
        out[name + "_ms_per_epoch"] = median_seconds(f) * 1e3 / epochs
    for name, net in (("teacher", teacher), ("student", relu_net([64, 16, 16, 10]))):
        for rows in (1, 1024):
            x = x_train[:rows]
            out["predict_%s_%d_samples_per_s" % (name, rows)] = rows / median_seconds(
                lambda: predict(net, x), repeat=max(1, 20000 // rows))
    print(json.dumps(out))


{"": same_steps, "--seeds": own_seeds, "--bench": bench}[mode]()
