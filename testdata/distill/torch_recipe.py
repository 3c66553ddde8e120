"""The issue's distillation recipe in PyTorch, the peer of lib/distill's training.

Usage: torch_recipe.py DIR

DIR holds what lib/distill's TestPeerTorchRecipe wrote, as .npy files:
  train_x, train_y, test_x     the digits split (float32 features, int64 labels)
  teacher.N.weight/.bias,      initial parameters of every dense layer, in
  student.N.weight/.bias       nn.Linear's layout ([out, in] and [out])
  teacher_order, student_order the rows' order of every epoch, [epochs, rows]
  soft_targets                 softmax(teacher logits / T) of the training rows
and recipe.json (lr, batch_size, temperature, alpha).

The teacher is fitted on cross-entropy; the student is distilled with
alpha * T^2 * KLDivLoss(batchmean) of the given soft targets plus (1 - alpha) *
cross-entropy; Adam with PyTorch's defaults, the last short batch kept. Both start
from the given parameters and visit the rows in the given order, so both programs
take the same steps. Written back into DIR: the parameters after ten steps
(PREFIX_s10.N.weight/.bias), after the first epoch (PREFIX_e1...) and at the end
(PREFIX_final...), the logits of the test rows (PREFIX_test_logits) and
version.json.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
d = sys.argv[1]


def load(name):
    return torch.from_numpy(np.load(os.path.join(d, name + ".npy")))


def save(name, t):
    np.save(os.path.join(d, name + ".npy"), t.detach().numpy())


recipe = json.load(open(os.path.join(d, "recipe.json")))
x_train, y_train, x_test = load("train_x"), load("train_y"), load("test_x")


def network(prefix):
    """The dense layers saved under prefix, ReLU between them, logits out."""
    layers, i = [], 0
    while os.path.exists(os.path.join(d, "%s.%d.weight.npy" % (prefix, i))):
        w = load("%s.%d.weight" % (prefix, i))
        dense = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            dense.weight.copy_(w)
            dense.bias.copy_(load("%s.%d.bias" % (prefix, i)))
        layers += [dense, torch.nn.ReLU()]
        i += 1
    return torch.nn.Sequential(*layers[:-1])


def save_params(prefix, net):
    dense = [m for m in net if isinstance(m, torch.nn.Linear)]
    for i, m in enumerate(dense):
        save("%s.%d.weight" % (prefix, i), m.weight)
        save("%s.%d.bias" % (prefix, i), m.bias)


def train(prefix, soft=None):
    net = network(prefix)
    opt = torch.optim.Adam(net.parameters(), lr=recipe["lr"])
    t, alpha, bs = recipe["temperature"], recipe["alpha"], recipe["batch_size"]
    for epoch, order in enumerate(load(prefix + "_order")):
        for start in range(0, len(order), bs):
            rows = order[start:start + bs]
            z = net(x_train[rows])
            loss = F.cross_entropy(z, y_train[rows])
            if soft is not None:
                kl = F.kl_div(F.log_softmax(z / t, dim=1), soft[rows], reduction="batchmean")
                loss = alpha * t * t * kl + (1 - alpha) * loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            if epoch == 0 and start == 9 * bs:
                save_params(prefix + "_s10", net)
        if epoch == 0:
            save_params(prefix + "_e1", net)
    save_params(prefix + "_final", net)
    with torch.no_grad():
        save(prefix + "_test_logits", net(x_test))


train("teacher")
train("student", load("soft_targets"))
json.dump({"torch": torch.__version__}, open(os.path.join(d, "version.json"), "w"))
