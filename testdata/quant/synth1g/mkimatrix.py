#!/usr/bin/python3
"""Write a legacy (.dat) importance matrix for the 1 GiB synth's four tensors.

Usage: mkimatrix.py OUT
Entries blk.0..3.ffn_up.weight, 4096 values each, one call: value i of entry n is
0.05 + exp(3 sin(0.37 i + n + 1)) / 4, except columns i = 5 mod 997 (zero). Then
the chunk count 1 and the dataset name "synth".
"""
import math, struct, sys

COLS = 4096
out = bytearray(struct.pack("<i", 4))
for n in range(4):
    name = b"blk.%d.ffn_up.weight" % n
    vals = [0.0 if i % 997 == 5 else 0.05 + math.exp(3 * math.sin(0.37 * i + n + 1)) / 4 for i in range(COLS)]
    out += struct.pack("<i", len(name)) + name + struct.pack("<ii", 1, COLS) + struct.pack("<%df" % COLS, *vals)
out += struct.pack("<i", 1) + struct.pack("<i", 5) + b"synth"
open(sys.argv[1], "wb").write(out)
