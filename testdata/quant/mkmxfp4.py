# Makes the MXFP4 goldens (README.md, "MXFP4"): /usr/bin/python3 mkmxfp4.py LIBGGML_BASE_SO
# in this directory. Writes mxfp4_edge.f32, then ggml's MXFP4 of rows.f32 and of it.
import ctypes, sys
import numpy as np

lib = ctypes.CDLL(sys.argv[1])


class Traits(ctypes.Structure):
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64), ("type_size", ctypes.c_size_t),
                ("is_quantized", ctypes.c_bool), ("to_float", ctypes.c_void_p),
                ("from_float_ref", ctypes.c_void_p)]


lib.ggml_get_type_traits.restype = ctypes.POINTER(Traits)
lib.ggml_quantize_chunk.restype = ctypes.c_size_t
lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                    ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
tr = lib.ggml_get_type_traits(39).contents
assert tr.type_name == b"mxfp4" and tr.blck_size == 32 and tr.type_size == 17
Row = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def quantize(src_file, out_file, deq_file=None):
    x = open(src_file, "rb").read()
    n = len(x) // 4
    src = ctypes.create_string_buffer(x, len(x))
    q = ctypes.create_string_buffer(n // 32 * 17)
    Row(tr.from_float_ref)(src, q, n)
    q2 = ctypes.create_string_buffer(n // 32 * 17)
    lib.ggml_quantize_chunk(39, src, q2, 0, n // 256, 256, None)
    assert q.raw == q2.raw
    open(out_file, "wb").write(q.raw)
    if deq_file:
        y = ctypes.create_string_buffer(len(x))
        Row(tr.to_float)(q, y, n)
        open(deq_file, "wb").write(y.raw)


# Blocks whose largest magnitude is d ulps from 2^k, for every k and d in -2..1.
rng = np.random.default_rng(5)
blocks = []
for k in range(-149, 128):
    p = int(np.array([np.float32(2.0 ** k)], dtype=np.float32).view(np.uint32)[0])
    for d in (-2, -1, 0, 1):
        m = np.array([max(p + d, 1)], dtype=np.uint32).view(np.float32)[0]
        x = rng.standard_normal(32).astype(np.float32)
        x = (x / np.abs(x).max() * m * np.float32(0.99)).astype(np.float32)
        x[rng.integers(32)] = m if rng.integers(2) else -m
        blocks.append(x)
x = np.concatenate(blocks).astype(np.float32)
x = np.concatenate([x, np.zeros((-len(x)) % 256, np.float32)])
x.tofile("mxfp4_edge.f32")

quantize("rows.f32", "mxfp4.bin", "mxfp4.dequant.f32")
quantize("mxfp4_edge.f32", "mxfp4_edge.bin")
