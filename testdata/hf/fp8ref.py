"""fp8ref.py FP8_DIR TWIN_DIR: the converter's FP8 arithmetic written out in NumPy.

Reads the "fp8" checkpoint FP8_DIR (config.json quantization_config.weight_block_size, F8_E4M3
weights each with "<name>_scale_inv"), decodes every E4M3 weight to float32 and multiplies it by
its block's scale in float32, as convert_hf_to_gguf.py's dequant_simple does (weight.float() *
scale.repeat_interleave(...) cropped to the weight), and writes TWIN_DIR: the same checkpoint with
those values as BF16 (asserted exact: the twin holds the FP8 checkpoint's values bit for bit) and
without the scales or quantization_config, which today's converter can read on Debian's torch 1.13
(no float8 there). Its outputs are the references of the FP8 checkpoint (mkfp8ref.sh). Prints the
SHA-256 of each dequantized tensor's float32 bytes. Reads SafeTensors itself; shares no code with apr.
"""
import hashlib, json, os, shutil, struct, sys
import numpy as np

src, dst = sys.argv[1], sys.argv[2]


def read_st(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    meta = hdr.pop("__metadata__", None)
    data = b[8 + n:]
    items = sorted(hdr.items(), key=lambda kv: kv[1]["data_offsets"][0])
    return [(k, v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in items], meta


def e4m3_table():
    t = np.zeros(256, np.float32)
    for b in range(256):
        s, e, m = b >> 7, (b >> 3) & 15, b & 7
        if e == 15 and m == 7:
            v = np.nan
        elif e == 0:
            v = m / 8 * 2.0 ** -6
        else:
            v = (1 + m / 8) * 2.0 ** (e - 7)
        t[b] = -v if s else v
    return t


cfg = json.load(open(os.path.join(src, "config.json")))
q = cfg.pop("quantization_config")
assert q["quant_method"] == "fp8"
bs = q.get("weight_block_size")
tensors, meta = read_st(os.path.join(src, "model.safetensors"))
by = {k: (d, s, raw) for k, d, s, raw in tensors}
lut = e4m3_table()
out = []
for name, dt, shape, raw in tensors:
    if name.endswith("_scale_inv"):
        continue
    if dt == "F8_E4M3":
        w = lut[np.frombuffer(raw, np.uint8)].reshape(shape)
        sd, ss, sraw = by[name + "_scale_inv"]
        assert sd == "F32"
        s = np.frombuffer(sraw, np.float32).reshape(ss)
        if bs is not None:
            s = np.repeat(np.repeat(s, bs[0], axis=0), bs[1], axis=1)[: shape[0], : shape[1]]
        v = (w * s).astype(np.float32)  # one float32 rounding, as torch's float32 multiply
        print(hashlib.sha256(v.tobytes()).hexdigest(), name)
        bits = v.view(np.uint32)
        assert not np.any(bits & 0xFFFF), name + ": not exact in BF16"
        raw, dt = (bits >> 16).astype("<u2").tobytes(), "BF16"
    out.append((name, dt, shape, raw))

os.makedirs(dst)
hdr, off = {}, 0
if meta is not None:
    hdr["__metadata__"] = meta
for name, dt, shape, raw in out:
    hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
    off += len(raw)
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(os.path.join(dst, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for _, _, _, raw in out:
        f.write(raw)
json.dump(cfg, open(os.path.join(dst, "config.json"), "w"), indent=2)
for f in os.listdir(src):
    if f not in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(src, f), dst)
