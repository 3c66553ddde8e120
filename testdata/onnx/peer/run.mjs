// Runs ONNX models with onnxruntime-node for lib/onnx's peer test: reads a JSON list
// of jobs {model, rows, cols, x} on stdin (x: rows*cols numbers), prints a JSON list
// of results, one per job: {outputs: {name: {dims, type, data}}} or {error}.
import { readFileSync } from "node:fs";
import ort from "onnxruntime-node";

const jobs = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const job of jobs) {
  try {
    const session = await ort.InferenceSession.create(job.model);
    const feeds = {};
    feeds[session.inputNames[0]] = new ort.Tensor("float32", Float32Array.from(job.x), [job.rows, job.cols]);
    const out = await session.run(feeds);
    const outputs = {};
    for (const name of session.outputNames) {
      const t = out[name];
      outputs[name] = { dims: t.dims, type: t.type, data: Array.from(t.data, Number) };
    }
    results.push({ inputs: session.inputNames, outputs });
  } catch (e) {
    results.push({ error: String(e) });
  }
}
process.stdout.write(JSON.stringify(results));
