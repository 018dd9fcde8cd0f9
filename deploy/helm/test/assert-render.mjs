// assert-render.mjs checks what a rendered a2a-connector chart must contain, beyond schema
// validity (validate.mjs): the migration hook and its ordering, the hardening of every pod,
// probes, drain timing, autoscaling and disruption budgets, config wiring.
//
//   node assert-render.mjs minimal|production|variant FILE
//
// minimal:    deploy/helm/test/values-minimal.yaml (chart-created Secret, no HPA, no extras)
// production: deploy/helm/test/values-production.yaml (existingSecret, HPAs, OTel, ServiceMonitor,
//             Ingress, preStop sleep, agent CA bundle from a ConfigMap)
// variant:    chart-test.sh's variant render (minimal plus a Secret as the agent CA bundle, under
//             another key); only the agent CA checks
// Prints one line per check; exit status 1 when any fails.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const [profile, file] = process.argv.slice(2);
if (!["minimal", "production", "variant"].includes(profile) || !file) {
  console.error("usage: node assert-render.mjs minimal|production|variant FILE");
  process.exit(2);
}
const docs = parseAllDocuments(readFileSync(file, "utf8"))
  .map((d) => d.toJS())
  .filter((o) => o);
const prod = profile === "production";

let failed = 0;
let passed = 0;
function check(name, ok, detail = "") {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? "  ok  " : "  FAIL"}  ${name}${!ok && detail ? `: ${detail}` : ""}`);
}
const all = (kind) => docs.filter((o) => o.kind === kind);
const one = (kind, suffix) => docs.find((o) => o.kind === kind && o.metadata.name.endsWith(suffix));
const ann = (o) => o?.metadata?.annotations ?? {};
const seconds = (d) => {
  const m = /^(\d+)s$/.exec(d ?? "");
  return m ? Number(m[1]) : NaN;
};

const connector = one("Deployment", "-connector");
const console_ = one("Deployment", "-console-api");
const job = one("Job", "-migrate");
const config = all("ConfigMap")[0];
check("two Deployments: connector and console-api", connector && console_ && all("Deployment").length === 2);

// --- private CA toward agents (agentCA) ----------------------------------------------------------
// What each render's values ask for: the source of the bundle, or null (nothing mounted).
const agentCA = {
  minimal: null,
  production: { source: "configMap", name: "agent-ca", key: "ca.crt" },
  variant: { source: "secret", name: "agent-pki", key: "bundle.pem" },
}[profile];
for (const o of [connector, console_]) {
  if (!o) continue;
  const pod = o.spec.template.spec;
  const c = pod.containers[0];
  const envs = (c.env ?? []).filter((e) => e.name === "A2AC_AGENT_CA_FILE");
  const caVolumes = (pod.volumes ?? []).filter((v) => v.configMap || v.secret);
  const name = o.metadata.name;
  if (!agentCA) {
    check(`${name}: no agent CA (no A2AC_AGENT_CA_FILE, no ConfigMap or Secret volume)`, envs.length === 0 && caVolumes.length === 0, JSON.stringify([envs, caVolumes]));
    continue;
  }
  const file = envs[0]?.value ?? "";
  check(`${name}: A2AC_AGENT_CA_FILE set once, as a plain value`, envs.length === 1 && !envs[0].valueFrom && file.startsWith("/"), JSON.stringify(envs));
  // The mount whose folder holds the file, and the volume behind it.
  const mount = (c.volumeMounts ?? []).find((m) => file === `${m.mountPath.replace(/\/$/, "")}/${file.split("/").pop()}`);
  const vol = (pod.volumes ?? []).find((v) => v.name === mount?.name);
  const src = vol?.[agentCA.source];
  const srcName = agentCA.source === "secret" ? src?.secretName : src?.name;
  check(`${name}: the agent CA folder is mounted read-only (readOnly: true, no subPath)`, mount?.readOnly === true && !mount?.subPath, JSON.stringify(mount));
  check(`${name}: the agent CA volume is the ${agentCA.source} ${agentCA.name}`, srcName === agentCA.name && !vol?.[agentCA.source === "secret" ? "configMap" : "secret"], JSON.stringify(vol));
  const items = src?.items ?? [];
  check(
    `${name}: A2AC_AGENT_CA_FILE is the mount path + the key ${agentCA.key}, the only key projected`,
    items.length === 1 && items[0].key === agentCA.key && file === `${mount?.mountPath}/${items[0].path}` && items[0].path === agentCA.key,
    JSON.stringify({ file, mountPath: mount?.mountPath, items }),
  );
}
const jobEnv = job?.spec.template.spec.containers[0]?.env ?? [];
check("migration Job: no agent CA (it calls no agent)", !jobEnv.some((e) => e.name === "A2AC_AGENT_CA_FILE"));
if (profile === "variant") {
  console.log(`${profile}: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

// --- migration hook ----------------------------------------------------------------------------
check("migration Job is a pre-install,pre-upgrade hook", ann(job)["helm.sh/hook"] === "pre-install,pre-upgrade", ann(job)["helm.sh/hook"]);
check(
  "migration Job delete policy before-hook-creation,hook-succeeded",
  ann(job)["helm.sh/hook-delete-policy"] === "before-hook-creation,hook-succeeded",
);
const jc = job?.spec.template.spec.containers[0];
check(
  "migration Job runs `console-api migrate`",
  jc?.command?.[0] === "/usr/local/bin/console-api" && jc?.args?.join(" ") === "migrate",
  JSON.stringify([jc?.command, jc?.args]),
);
check("migration Job does not retry forever", job?.spec.backoffLimit >= 0 && job?.spec.activeDeadlineSeconds > 0);
const jobSA = job?.spec.template.spec.serviceAccountName;
const chartSA = all("ServiceAccount")[0]?.metadata.name;
check("migration Job does not use the chart's ServiceAccount (it does not exist yet on install)", jobSA !== chartSA, jobSA);
const secret = all("Secret")[0];
if (prod) {
  check("existingSecret: the chart renders no Secret", all("Secret").length === 0);
  const refs = new Set();
  for (const o of [connector, console_, job]) {
    for (const c of o?.spec.template.spec.containers ?? []) {
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref && ref.name !== "otel-credentials") refs.add(ref.name);
      }
    }
  }
  check("every secretKeyRef points at existingSecret", refs.size === 1 && refs.has("a2a-connector-secrets"), [...refs].join(","));
  const jobDb = jc?.env.find((e) => e.name === "DATABASE_URL")?.valueFrom?.secretKeyRef?.key;
  check("migration Job reads its own DATABASE_URL key (separateDatabaseUrl)", jobDb === "MIGRATION_DATABASE_URL", jobDb);
} else {
  check("the chart's Secret exists", secret !== undefined);
  check(
    "the Secret is a hook created before the Job (pre-install,pre-upgrade, lower weight)",
    /pre-install/.test(ann(secret)["helm.sh/hook"]) &&
      /pre-upgrade/.test(ann(secret)["helm.sh/hook"]) &&
      Number(ann(secret)["helm.sh/hook-weight"]) < Number(ann(job)["helm.sh/hook-weight"]),
    JSON.stringify(ann(secret)),
  );
  check("the Secret survives its hook (no hook-succeeded delete)", !/hook-succeeded/.test(ann(secret)["helm.sh/hook-delete-policy"] ?? ""));
  const keys = Object.keys(secret?.data ?? {}).sort().join(",");
  check("the Secret holds DATABASE_URL, A2AC_SECRET_KEY, A2AC_ADMIN_TOKEN", keys === "A2AC_ADMIN_TOKEN,A2AC_SECRET_KEY,DATABASE_URL", keys);
}

// --- pods: hardening ---------------------------------------------------------------------------
for (const o of [connector, console_, job]) {
  if (!o) continue;
  const name = `${o.kind} ${o.metadata.name}`;
  const pod = o.spec.template.spec;
  const psc = pod.securityContext ?? {};
  check(`${name}: automountServiceAccountToken false`, pod.automountServiceAccountToken === false);
  check(
    `${name}: pod runAsNonRoot, runAsUser 65532, seccomp RuntimeDefault`,
    psc.runAsNonRoot === true && psc.runAsUser === 65532 && psc.seccompProfile?.type === "RuntimeDefault",
    JSON.stringify(psc),
  );
  for (const c of pod.containers) {
    const sc = c.securityContext ?? {};
    check(
      `${name}/${c.name}: readOnlyRootFilesystem, no privilege escalation, drop ALL, non-root 65532, seccomp`,
      sc.readOnlyRootFilesystem === true &&
        sc.allowPrivilegeEscalation === false &&
        sc.capabilities?.drop?.includes("ALL") &&
        sc.runAsNonRoot === true &&
        sc.runAsUser === 65532 &&
        sc.seccompProfile?.type === "RuntimeDefault",
      JSON.stringify(sc),
    );
    check(`${name}/${c.name}: resource requests and a memory limit`, c.resources?.requests?.cpu && c.resources?.requests?.memory && c.resources?.limits?.memory);
    if (prod) check(`${name}/${c.name}: image pinned by digest`, /@sha256:[0-9a-f]{64}$/.test(c.image), c.image);
  }
}

// --- probes, ports, drain ----------------------------------------------------------------------
const cc = connector?.spec.template.spec.containers[0];
const grpcPort = cc?.ports?.find((p) => p.name === "grpc")?.containerPort;
check("connector: native gRPC liveness probe on the gRPC port", cc?.livenessProbe?.grpc?.port === grpcPort && grpcPort > 0);
check(
  "connector: gRPC readiness probe asks for a2aconnector.v1.Connector",
  cc?.readinessProbe?.grpc?.port === grpcPort && cc?.readinessProbe?.grpc?.service === "a2aconnector.v1.Connector",
);
check("connector: A2AC_GRPC_ADDR matches the container port", cc?.env?.find((e) => e.name === "A2AC_GRPC_ADDR")?.value === `:${grpcPort}`);
const ac = console_?.spec.template.spec.containers[0];
check("console-api: liveness GET /healthz, readiness GET /readyz", ac?.livenessProbe?.httpGet?.path === "/healthz" && ac?.readinessProbe?.httpGet?.path === "/readyz");
check("console-api: only console-api gets A2AC_ADMIN_TOKEN", ac?.env?.some((e) => e.name === "A2AC_ADMIN_TOKEN") && !cc?.env?.some((e) => e.name === "A2AC_ADMIN_TOKEN") && !jc?.env?.some((e) => e.name === "A2AC_ADMIN_TOKEN"));
const shutdown = seconds(config?.data?.A2AC_SHUTDOWN_TIMEOUT);
// Kubernetes removes a terminating pod's endpoints while it runs: by default the connector keeps
// serving through a preStop sleep, then through its NOT_SERVING drain delay.
check("connector: a preStop sleep by default", (cc?.lifecycle?.preStop?.sleep?.seconds ?? 0) > 0);
check("connector: A2AC_DRAIN_DELAY, A2AC_INFLIGHT_SYNC and A2AC_INFLIGHT_STALE are set",
  ["A2AC_DRAIN_DELAY", "A2AC_INFLIGHT_SYNC", "A2AC_INFLIGHT_STALE"].every((n) => cc?.env?.some((e) => e.name === n && e.value)));
for (const [o, c] of [[connector, cc], [console_, ac]]) {
  if (!o) continue;
  const grace = o.spec.template.spec.terminationGracePeriodSeconds;
  const sleep = c?.lifecycle?.preStop?.sleep?.seconds ?? 0;
  const drain = seconds(c?.env?.find((e) => e.name === "A2AC_DRAIN_DELAY")?.value ?? "0s");
  check(
    `${o.metadata.name}: terminationGracePeriodSeconds (${grace}) > preStop sleep (${sleep}) + A2AC_DRAIN_DELAY (${drain}) + A2AC_SHUTDOWN_TIMEOUT (${shutdown})`,
    grace > shutdown + sleep + drain,
  );
  if (prod) check(`${o.metadata.name}: preStop uses the native sleep action (no shell in the image)`, sleep > 0 && !c.lifecycle.preStop.exec);
  const a = ann(o.spec.template);
  check(`${o.metadata.name}: checksum/config annotation rolls pods on config changes`, /^[0-9a-f]{64}$/.test(a["checksum/config"] ?? ""));
  if (!prod) check(`${o.metadata.name}: checksum/secret annotation`, /^[0-9a-f]{64}$/.test(a["checksum/secret"] ?? ""));
  check(`${o.metadata.name}: topologySpreadConstraints`, (o.spec.template.spec.topologySpreadConstraints ?? []).length > 0);
  check(`${o.metadata.name}: envFrom the chart's ConfigMap`, c?.envFrom?.some((e) => e.configMapRef?.name === config?.metadata.name));
}

const svc = one("Service", "-connector");
const grpcSvcPort = svc?.spec.ports.find((p) => p.name === "grpc");
check("connector Service: ClusterIP, port named grpc with appProtocol", svc?.spec.type === "ClusterIP" && grpcSvcPort?.appProtocol === "grpc");

// --- config --------------------------------------------------------------------------------------
for (const k of ["A2AC_LOG_LEVEL", "A2AC_HOLD_TTL", "A2AC_TURN_TIMEOUT", "A2AC_SHUTDOWN_TIMEOUT", "A2AC_ALLOW_INSECURE_HTTP", "A2AC_METRICS_ADDR", "OTEL_SDK_DISABLED"]) {
  check(`ConfigMap has ${k}`, typeof config?.data?.[k] === "string");
}
const noSecretsInConfig = !Object.keys(config?.data ?? {}).some((k) => /DATABASE_URL|SECRET_KEY|ADMIN_TOKEN/.test(k));
check("ConfigMap holds no secrets", noSecretsInConfig);

// --- scaling and disruption ----------------------------------------------------------------------
const pdbs = all("PodDisruptionBudget");
check("two PodDisruptionBudgets (policy/v1)", pdbs.length === 2 && pdbs.every((p) => p.apiVersion === "policy/v1"));
for (const p of pdbs) {
  const d = docs.find((o) => o.kind === "Deployment" && JSON.stringify(o.spec.selector.matchLabels) === JSON.stringify(p.spec.selector.matchLabels));
  check(`${p.metadata.name}: selects exactly its Deployment's pods`, d !== undefined);
}
const hpas = all("HorizontalPodAutoscaler");
if (prod) {
  check("two HPAs (autoscaling/v2)", hpas.length === 2 && hpas.every((h) => h.apiVersion === "autoscaling/v2"));
  for (const h of hpas) {
    const d = one("Deployment", h.spec.scaleTargetRef.name.replace(/^.*(-connector|-console-api)$/, "$1"));
    check(`${h.metadata.name}: targets Deployment ${h.spec.scaleTargetRef.name}`, d?.metadata.name === h.spec.scaleTargetRef.name);
    check(`${h.metadata.name}: its Deployment leaves replicas to the HPA`, d && d.spec.replicas === undefined);
  }
  check("ServiceMonitor scrapes the metrics port", all("ServiceMonitor")[0]?.spec.endpoints?.[0]?.port === "metrics");
  check("Ingress for the console API", one("Ingress", "-console-api")?.spec.rules[0].http.paths[0].backend.service.name === console_?.metadata.name);
  check("OTel exporter configured", config?.data?.OTEL_SDK_DISABLED === "false" && config?.data?.OTEL_EXPORTER_OTLP_ENDPOINT?.startsWith("http"));
  check(
    "OTEL_SERVICE_NAME per binary",
    cc?.env?.find((e) => e.name === "OTEL_SERVICE_NAME")?.value !== ac?.env?.find((e) => e.name === "OTEL_SERVICE_NAME")?.value,
  );
} else {
  check("no HPA by default; Deployments set replicas", hpas.length === 0 && connector?.spec.replicas >= 1 && console_?.spec.replicas >= 1);
  check("no ServiceMonitor or Ingress by default", all("ServiceMonitor").length === 0 && all("Ingress").length === 0);
  check("tracing off by default (OTEL_SDK_DISABLED=true)", config?.data?.OTEL_SDK_DISABLED === "true");
}

// --- labels ------------------------------------------------------------------------------------
const unlabeled = docs.filter((o) => {
  const l = o.metadata.labels ?? {};
  return !(l["app.kubernetes.io/name"] && l["app.kubernetes.io/instance"] && l["app.kubernetes.io/managed-by"] && l["helm.sh/chart"]);
});
check("every object has the app.kubernetes.io/* and helm.sh/chart labels", unlabeled.length === 0, unlabeled.map((o) => o.metadata.name).join(","));

console.log(`${profile}: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
