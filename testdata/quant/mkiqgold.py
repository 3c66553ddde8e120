#!/usr/bin/python3
"""Make the IQ2/IQ1 goldens of testdata/quant from today's ggml (see README.md).

usage: mkiqgold.py LIBGGML_BASE_SO  (run in testdata/quant)

Set 1, on rows.f32:

rows512.imatrix.f32: 512 importance weights, numpy default_rng(20261127).lognormal(0, 1)
as float32, entries 7 and 300 set to 0 (llama-imatrix writes 0 for a dead column).
Each NAME.w.bin: ggml_quantize_chunk over rows.f32 read as 53 rows of 512 values
with that imatrix; each NAME.bin (the types ggml quantizes without weights too):
the same with no imatrix.

Set 2, random: iqrand.f32 is 128 blocks of 256 values from numpy
default_rng(20261128): blocks 0-31 Laplace(0, 1); 32-63 Student t(3) times 1e-3;
64-95 N(0, 1) with 80% of the values set to 0; 96-127 uniform(-1, 1) with one value
per block times 50. iqrand.imatrix.f32 is 1024 weights lognormal(0, 2) from the
same generator. NAME.rand.w.bin and NAME.rand.bin: as set 1, rows of 1024 values.

Set 3, edges: iqedge.f32 is 5 groups of 20 blocks of 256 values from numpy
default_rng(20261129); in each group, 4 blocks of each of: N(0, 1) times 1e-38 (f32
subnormals), N(0, 1) times 1e6, {-2, 0, 2}, -0 with 2% of the values 1e-7, N(0, 1)
rounded to multiples of 1/4. iqedge.imatrix.f32 holds one 256-value importance vector
per group (each drawn just before its group's blocks): zeros; exponential times 1e10;
0 or 1; exponential times 1e-20; lognormal(0, 3). NAME.edge.w.bin: each group
quantized as rows of 256 with its vector, the groups back to back.
"""
import ctypes, sys
import numpy as np

lib = ctypes.CDLL(sys.argv[1])
lib.ggml_quantize_init.argtypes = [ctypes.c_int]
lib.ggml_quantize_chunk.restype = ctypes.c_size_t
lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
lib.ggml_row_size.restype = ctypes.c_size_t
lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]



def quantize(code, x, rows, cols, w):
    """ggml_quantize_chunk of rows x cols float32 values from x, weights w (or None)."""
    out = ctypes.create_string_buffer(lib.ggml_row_size(code, cols) * rows)
    n = lib.ggml_quantize_chunk(code, x.ctypes.data, out, 0, rows, cols,
                                None if w is None else w.ctypes.data)
    return out.raw[:n]


def write(fn, data):
    open(fn, "wb").write(data)
    print(fn, len(data))


COLS = 512
x = np.fromfile("rows.f32", dtype="<f4").reshape(-1, COLS).copy()
qw = np.random.default_rng(20261127).lognormal(0.0, 1.0, COLS).astype("<f4")
qw[7] = 0
qw[300] = 0
qw.tofile("rows512.imatrix.f32")

types = {"iq2_xxs": (16, False), "iq2_xs": (17, False), "iq2_s": (22, True),
         "iq1_s": (19, False), "iq1_m": (29, True)}
for name, (code, unweighted) in types.items():
    lib.ggml_quantize_init(code)
    for w in ([qw, None] if unweighted else [qw]):
        write(name + (".w.bin" if w is not None else ".bin"), quantize(code, x, x.shape[0], COLS, w))

rng = np.random.default_rng(20261128)
blocks = [rng.laplace(0, 1, (32, 256)),
          rng.standard_t(3, (32, 256)) * 1e-3,
          rng.standard_normal((32, 256)) * (rng.random((32, 256)) >= 0.8),
          rng.uniform(-1, 1, (32, 256))]
for b in blocks[3]:
    b[rng.integers(256)] *= 50
xr = np.concatenate(blocks).astype("<f4")
xr.tofile("iqrand.f32")
COLS = 1024
xr = xr.reshape(-1, COLS).copy()
qr = rng.lognormal(0.0, 2.0, COLS).astype("<f4")
qr.tofile("iqrand.imatrix.f32")
for name, (code, unweighted) in types.items():
    for w in ([qr, None] if unweighted else [qr]):
        write(name + (".rand.w.bin" if w is not None else ".rand.bin"), quantize(code, xr, xr.shape[0], COLS, w))

rng = np.random.default_rng(20261129)
def edge_data(c):
    if c == 0: return rng.standard_normal((4, 256)) * 1e-38
    if c == 1: return rng.standard_normal((4, 256)) * 1e6
    if c == 2: return rng.integers(-1, 2, (4, 256)) * 2.0
    if c == 3:
        v = np.full((4, 256), -0.0); v[rng.random((4, 256)) < 0.02] = 1e-7; return v
    return np.round(rng.standard_normal((4, 256)) * 4) / 4
def edge_weights(g):
    if g == 0: return np.zeros(256)
    if g == 1: return rng.exponential(1, 256) * 1e10
    if g == 2: return rng.integers(0, 2, 256).astype(float)
    if g == 3: return rng.exponential(1, 256) * 1e-20
    return rng.lognormal(0, 3, 256)
xs, ws = [], []
for g in range(5):
    ws.append(edge_weights(g).astype("<f4"))
    xs.append(np.concatenate([edge_data(c) for c in range(5)]).astype("<f4"))
xe = np.concatenate(xs).reshape(-1).copy()
xe.tofile("iqedge.f32")
qe = np.concatenate(ws).copy()
qe.tofile("iqedge.imatrix.f32")
for name, (code, _) in types.items():
    out = b""
    for g in range(5):
        xg = np.ascontiguousarray(xe[g*20*256:(g+1)*20*256])
        wg = np.ascontiguousarray(qe[g*256:(g+1)*256])
        out += quantize(code, xg, 20, 256, wg)
    write(name + ".edge.w.bin", out)
