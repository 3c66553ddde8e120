# An independent NumPy forward pass of an apr MixtureOfExperts, used by the peer
# tests of lib/predict (moe_peer_test.go) and cmd/apr-distill (moe_test.go):
# python3 moe_forward.py DIR reads the tensors a saved file holds (one .npy per
# tensor, named as in the file), its model_config (config.json, with "classes"
# added for classifier experts) and the rows (x.npy), all in DIR, and writes the
# mixture's output (probabilities or values) to DIR/out.npy.
import sys, json, numpy as np
d = sys.argv[1]
cfg = json.load(open(d + "/config.json"))
T = lambda name: np.load(d + "/" + name + ".npy").astype(np.float64)
x = np.load(d + "/x.npy")
W, b, k = T("gate.weight"), T("gate.bias"), cfg["top_k"]
z = x @ W.T + b
g = np.zeros_like(z)
for i in range(len(z)):
    sel = np.argsort(-z[i], kind="stable")[:k]
    e = np.exp(z[i, sel] - z[i, sel].max())
    g[i, sel] = e / e.sum()
def softmax(a):
    a = np.exp(a - a.max(axis=1, keepdims=True))
    return a / a.sum(axis=1, keepdims=True)
def expert(i, spec):
    p = "expert.%d." % i
    t, c = spec["type"], spec["config"]
    if t == 0x01:
        return (x @ T(p + "coefficients") + T(p + "intercept")[0])[:, None]
    if t == 0x02:
        w, b0 = T(p + "coefficients"), T(p + "intercept")
        if w.ndim == 2:
            return softmax(x @ w.T + b0)
        q = 1 / (1 + np.exp(-(x @ w + b0[0])))
        return np.stack([1 - q, q], axis=1)
    h = x
    for j, act in enumerate(c["activations"]):
        h = h @ T(p + "layers.%d.weight" % j).T + T(p + "layers.%d.bias" % j)
        h = {"identity": lambda a: a, "relu": lambda a: np.maximum(a, 0), "tanh": np.tanh,
             "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "softmax": softmax}[act](h)
    if c["activations"][-1] == "sigmoid" and h.shape[1] == 1 and cfg.get("classes"):
        h = np.hstack([1 - h, h])
    return h
out = sum(g[:, [i]] * expert(i, s) for i, s in enumerate(cfg["experts"]))
np.save(d + "/out.npy", out)
