# mkexperts.py OUT: a small imatrix GGUF in llama-imatrix's layout with 3-D (expert)
# entries, written with llama.cpp's gguf-py (README.md): seeded sums, one expert that
# no token reached (count 0), and a dense entry.
import sys
import numpy as np
import gguf

rng = np.random.default_rng(28)
w = gguf.GGUFWriter(sys.argv[1], arch="", endianess=gguf.GGUFEndian.LITTLE)
w.kv_data[0].clear()  # no general.architecture: llama-imatrix writes only its keys
w.add_string("general.type", "imatrix")
w.add_array("imatrix.datasets", ["calib-a.txt", "calib-b.txt"])
w.add_uint32("imatrix.chunk_count", 7)
w.add_uint32("imatrix.chunk_size", 64)
for name, ne0, counts in [("blk.0.ffn_down_exps.weight", 64, [300, 0, 41, 448]),
                          ("blk.0.ffn_up_exps.weight", 32, [300, 0, 41, 448]),
                          ("blk.0.attn_q.weight", 32, [448])]:
    sums = (rng.random((len(counts), ne0), dtype=np.float32) * np.array(counts, dtype=np.float32)[:, None]).astype(np.float32)
    w.add_tensor(name + ".in_sum2", sums)
    w.add_tensor(name + ".counts", np.array(counts, dtype=np.float32).reshape(len(counts), 1))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
