// validate.mjs checks rendered Kubernetes manifests against the Kubernetes OpenAPI schemas,
// offline, with the schemas the pinned npm package kubernetes-models (and
// @kubernetes-models/prometheus-operator for ServiceMonitor) compiles in. It stands in for
// kubeconform, which downloads its schemas at run time.
//
//   node validate.mjs [--kube-version 1.30.0] FILE...
//
// For every YAML document: apiVersion, kind and metadata.name are present; the API is not one
// Kubernetes removed by that version; a schema exists for apiVersion/kind (an unknown kind is an
// error, not a skip); the document passes it; and, like kubeconform -strict, it has no field the
// schema does not know (the compiled schemas do not forbid extra fields, so the validator's
// reads are recorded and every field it never looked at is reported). Each failure prints the
// file, the document and the JSON path. Exit status 1 on any failure.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const args = process.argv.slice(2);
let kubeVersion = "1.30.0";
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--kube-version") kubeVersion = args[++i];
  else files.push(args[i]);
}
if (files.length === 0) {
  console.error("usage: node validate.mjs [--kube-version X.Y.Z] FILE...");
  process.exit(2);
}
const [kubeMajor, kubeMinor] = kubeVersion.split(".").map(Number);

// APIs removed from Kubernetes, with the minor version that removed them (1.x).
const removed = {
  "extensions/v1beta1": 16,
  "apps/v1beta1": 16,
  "apps/v1beta2": 16,
  "networking.k8s.io/v1beta1": 22,
  "batch/v1beta1": 25,
  "policy/v1beta1": 25,
  "autoscaling/v2beta1": 25,
  "autoscaling/v2beta2": 26,
};

// Where the model class of an apiVersion lives.
function moduleFor(apiVersion) {
  if (apiVersion.startsWith("monitoring.coreos.com/")) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  }
  return `kubernetes-models/${apiVersion}`; // core "v1" is kubernetes-models/v1
}

const pointer = (path, key) => `${path}/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`;

// track wraps value so that every property the validator reads is recorded under its JSON path.
// inspected: objects the validator looked into (read any key, present or not); read: fields it
// read; enumerated: objects whose keys it listed (maps checked by additionalProperties).
function track(value, path, rec) {
  if (value === null || typeof value !== "object") return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof key !== "string") return v;
      rec.inspected.add(path);
      if (Object.prototype.hasOwnProperty.call(target, key)) {
        const p = pointer(path, key);
        rec.read.add(p);
        return track(v, p, rec);
      }
      return v;
    },
    ownKeys(target) {
      rec.enumerated.add(path);
      return Reflect.ownKeys(target);
    },
  });
}

// unknownFields lists the fields of value the validator never read, inside objects it inspected
// field by field. Objects it never looked into are free-form in the schema and are skipped.
function unknownFields(value, path, rec, out) {
  if (value === null || typeof value !== "object") return out;
  if (Array.isArray(value)) {
    value.forEach((v, i) => unknownFields(v, pointer(path, i), rec, out));
    return out;
  }
  if (!rec.inspected.has(path) || rec.enumerated.has(path)) return out;
  for (const [k, v] of Object.entries(value)) {
    const p = pointer(path, k);
    if (!rec.read.has(p)) out.push(p);
    else unknownFields(v, p, rec, out);
  }
  return out;
}

const modules = new Map();
async function modelClass(apiVersion, kind) {
  const spec = moduleFor(apiVersion);
  if (!modules.has(spec)) {
    modules.set(spec, await import(spec).catch(() => null));
  }
  const mod = modules.get(spec);
  return mod && typeof mod[kind] === "function" ? mod[kind] : null;
}

let failures = 0;
let checked = 0;
const counts = new Map();

for (const file of files) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  for (const [index, doc] of docs.entries()) {
    const where = `${file} document ${index + 1}`;
    const fail = (msg, obj) => {
      failures++;
      console.error(`FAIL ${where}${obj ? ` (${obj.kind ?? "?"} ${obj.metadata?.name ?? "?"})` : ""}: ${msg}`);
    };
    if (doc.errors.length > 0) {
      fail(`YAML: ${doc.errors.map((e) => e.message).join("; ")}`);
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue; // an empty document between ---
    checked++;
    const { apiVersion, kind } = obj;
    if (typeof apiVersion !== "string" || typeof kind !== "string" || !obj.metadata?.name) {
      fail("apiVersion, kind and metadata.name are required", obj);
      continue;
    }
    const gone = removed[apiVersion];
    if (gone !== undefined && kubeMajor === 1 && kubeMinor >= gone) {
      fail(`${apiVersion} was removed in Kubernetes 1.${gone} (target ${kubeVersion})`, obj);
      continue;
    }
    const Model = await modelClass(apiVersion, kind);
    if (!Model) {
      fail(`no schema for ${apiVersion} ${kind}`, obj);
      continue;
    }
    const rec = { inspected: new Set(), read: new Set(), enumerated: new Set() };
    try {
      // The model's validate runs the compiled schema on `this`; give it the tracked document.
      Model.prototype.validate.call(track(obj, "", rec));
    } catch (err) {
      const errors = err.errors ?? [];
      if (errors.length === 0) fail(err.message, obj);
      for (const e of errors) {
        fail(`${e.instancePath || "/"}: ${e.message ?? e.keyword} ${JSON.stringify(e.params ?? {})}`, obj);
      }
      console.error(doc.toString());
      continue;
    }
    const unknown = unknownFields(obj, "", rec, []);
    for (const p of unknown) fail(`${p}: field not in the ${apiVersion} ${kind} schema`, obj);
    if (unknown.length > 0) {
      console.error(doc.toString());
      continue;
    }
    const key = `${apiVersion} ${kind}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
}

for (const [key, n] of [...counts.entries()].sort()) console.log(`  valid  ${String(n).padStart(2)}  ${key}`);
console.log(`${checked} documents, ${failures === 0 ? "all valid" : `${failures} problem(s)`} (schemas: kubernetes-models, target Kubernetes ${kubeVersion})`);
process.exit(failures === 0 ? 0 : 1);
