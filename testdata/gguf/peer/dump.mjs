// Test-only peer for lib/gguf (TestPeerHuggingFaceGGUF): parses each GGUF file given
// on the command line with @huggingface/gguf and prints, as one JSON document, what
// that parser sees: every KV with its value type, array element type and value, the
// tensor infos and the data section offset. Values are normalised so that Go can
// compare them exactly: integers as decimal strings, floats as the hex bit pattern
// of the float64 the parser holds (an f32 widens exactly), strings as they are.
import { gguf } from "@huggingface/gguf";

const SYNTHETIC = new Set(["version", "tensor_count", "kv_count"]);

function bitsOf(x) {
	const dv = new DataView(new ArrayBuffer(8));
	dv.setFloat64(0, x, true);
	return dv.getBigUint64(0, true).toString(16);
}

function norm(v) {
	if (Array.isArray(v)) return v.map(norm);
	switch (typeof v) {
		case "bigint":
			return v.toString();
		case "boolean":
			return v ? "true" : "false";
		case "string":
			return v;
		case "number":
			return Number.isInteger(v) && !Object.is(v, -0) ? { int: String(v), bits: bitsOf(v) } : { bits: bitsOf(v) };
	}
	throw new Error("unexpected value of type " + typeof v);
}

const out = [];
for (const path of process.argv.slice(2)) {
	const r = await gguf(path, { allowLocalFile: true, typedMetadata: true });
	const kvs = [];
	for (const [key, e] of Object.entries(r.typedMetadata)) {
		if (SYNTHETIC.has(key)) continue;
		kvs.push({ key, type: e.type, subType: e.subType ?? null, value: norm(e.value) });
	}
	out.push({
		path,
		version: r.metadata.version,
		tensorDataOffset: r.tensorDataOffset.toString(),
		kvs,
		tensors: r.tensorInfos.map((t) => ({
			name: t.name,
			n_dims: t.n_dims,
			shape: t.shape.map((d) => d.toString()),
			dtype: t.dtype,
			offset: t.offset.toString(),
		})),
	});
}
process.stdout.write(JSON.stringify(out));
