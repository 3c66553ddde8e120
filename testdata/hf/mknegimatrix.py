#!/usr/bin/python3
# mknegimatrix.py LLAMA_SRC LLAMA_QUANTIZE F32_GGUF: the reference of lib/llm's
# TestImatrixNegativeBytes. It writes ref/tiny-llama.imatrix.dat with negative
# importances (blk.0.attn_q.weight's values all negated, blk.1.attn_q.weight's
# first 128 of 256; a matrix llama-imatrix cannot make, its values being sums of
# squares), runs today's
#   llama-quantize --imatrix NEG.dat F32_GGUF OUT IQ2_XXS 2
# on testdata/hf/tiny-llama's F32 GGUF (the converter's --outtype f32, or apr-quant
# f32 testdata/hf/tiny-llama -o F32_GGUF, the same bytes) and
# prints the SHA-256 of those two tensors' data in OUT. LLAMA_SRC is llama.cpp's
# source tree (its gguf-py reads OUT).
import hashlib, os, struct, subprocess, sys, tempfile

src, quantize, f32 = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "gguf-py"))
import gguf  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
b = open(os.path.join(here, "ref", "tiny-llama.imatrix.dat"), "rb").read()
out, off = bytearray(b[:4]), 4
for _ in range(struct.unpack_from("<i", b, 0)[0]):
    n = struct.unpack_from("<i", b, off)[0]
    name = b[off + 4:off + 4 + n].decode()
    ncall, nval = struct.unpack_from("<ii", b, off + 4 + n)
    vals = list(struct.unpack_from("<%df" % nval, b, off + 12 + n))
    if name == "blk.0.attn_q.weight":
        vals = [-v for v in vals]
    elif name == "blk.1.attn_q.weight":
        vals = [-v if i < 128 else v for i, v in enumerate(vals)]
    out += b[off:off + 12 + n] + struct.pack("<%df" % nval, *vals)
    off += 12 + n + 4 * nval
out += b[off:]
with tempfile.TemporaryDirectory() as d:
    neg, res = os.path.join(d, "neg.dat"), os.path.join(d, "out.gguf")
    open(neg, "wb").write(out)
    r = subprocess.run([quantize, "--imatrix", neg, f32, res, "IQ2_XXS", "2"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stdout + r.stderr)
    for t in gguf.GGUFReader(res).tensors:
        if t.name in ("blk.0.attn_q.weight", "blk.1.attn_q.weight"):
            print(t.name, hashlib.sha256(t.data.tobytes()).hexdigest())
