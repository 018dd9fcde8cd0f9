{{/*
Names. Kubernetes names are at most 63 characters; component suffixes ("-console-api",
"-connector-headless") are added to fullname, so fullname is cut shorter.
*/}}
{{- define "a2ac.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "a2ac.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "a2ac.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "a2ac.labels" -}}
helm.sh/chart: {{ include "a2ac.chart" . }}
app.kubernetes.io/name: {{ include "a2ac.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "a2ac.imageTag" . | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: a2a-connector
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of one component: call with (dict "root" $ "component" "connector"). */}}
{{- define "a2ac.componentLabels" -}}
{{ include "a2ac.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Selector labels of one component; never change them (Deployment selectors are immutable). */}}
{{- define "a2ac.selectorLabels" -}}
app.kubernetes.io/name: {{ include "a2ac.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "a2ac.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "a2ac.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The migration hook runs before the chart's ServiceAccount exists on a first install, so it
cannot use it; a pre-existing one (create=false) is fine.
*/}}
{{- define "a2ac.migrationServiceAccountName" -}}
{{- if .Values.migration.serviceAccountName -}}
{{- .Values.migration.serviceAccountName -}}
{{- else if not .Values.serviceAccount.create -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- else -}}
default
{{- end -}}
{{- end -}}

{{- define "a2ac.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- define "a2ac.image" -}}
{{- $repo := required "image.repository is required: the registry path CI pushes the a2a-connector image to" .Values.image.repository -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repo .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (include "a2ac.imageTag" .) -}}
{{- end -}}
{{- end -}}

{{/* Name of the Secret the pods read, the chart's own or existingSecret. */}}
{{- define "a2ac.secretName" -}}
{{- default (printf "%s-secret" (include "a2ac.fullname" .)) .Values.secret.existingSecret -}}
{{- end -}}

{{- define "a2ac.configMapName" -}}
{{- printf "%s-config" (include "a2ac.fullname" .) -}}
{{- end -}}

{{/*
Checksums that roll the pods when their configuration changes. An existingSecret is not read
(the chart cannot see it): restart the Deployments yourself after changing it, or use a
reloader.
*/}}
{{- define "a2ac.configChecksums" -}}
checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.secret.existingSecret }}
checksum/secret: {{ include (print $.Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end -}}

{{/*
terminationGracePeriodSeconds of a component: explicit, or its preStop sleep, drain delay
(connector) and the shutdown timeout, plus 15 s for the last saves, task cancels and flushes
after the drain (each bounded by 5 s) and the process exit. Call with
(dict "root" $ "c" .Values.connector "name" "connector").
*/}}
{{- define "a2ac.terminationGrace" -}}
{{- $shutdown := int .root.Values.config.shutdownTimeoutSeconds -}}
{{- $sleep := add (int (default 0 .c.preStopSleepSeconds)) (int (default 0 .c.drainDelaySeconds)) -}}
{{- $grace := add $shutdown $sleep 15 -}}
{{- if not (kindIs "invalid" .c.terminationGracePeriodSeconds) -}}
{{- $grace = int .c.terminationGracePeriodSeconds -}}
{{- if le $grace (add $shutdown $sleep) -}}
{{- fail (printf "%s.terminationGracePeriodSeconds (%d) must be larger than config.shutdownTimeoutSeconds (%d) plus %s.preStopSleepSeconds and drainDelaySeconds (%d), or the kubelet kills in-flight turns" .name $grace $shutdown .name $sleep) -}}
{{- end -}}
{{- end -}}
{{- $grace -}}
{{- end -}}

{{/*
A2AC_DRAIN_DELAY of the connector, in seconds: drainDelaySeconds, plus the preStop sleep on a
cluster without the native sleep action (< 1.30), where the chart leaves preStop out
(a2ac.lifecycle with "fold") and the process keeps serving that long instead.
*/}}
{{- define "a2ac.drainDelay" -}}
{{- $drain := int (default 0 .c.drainDelaySeconds) -}}
{{- if not (semverCompare ">=1.30.0-0" .root.Capabilities.KubeVersion.Version) -}}
{{- $drain = add $drain (int (default 0 .c.preStopSleepSeconds)) -}}
{{- end -}}
{{- $drain -}}
{{- end -}}

{{/*
Environment shared by the long-running containers: secrets, the ConfigMap, and the
OpenTelemetry resource. Call with (dict "root" $ "c" .Values.connector "serviceName" "...").
*/}}
{{- define "a2ac.podEnv" -}}
{{- $v := .root.Values -}}
- name: K8S_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: K8S_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: K8S_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "a2ac.secretName" .root }}
      key: {{ $v.secret.keys.databaseUrl }}
- name: A2AC_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "a2ac.secretName" .root }}
      key: {{ $v.secret.keys.secretKey }}
- name: A2AC_SECRET_KEY_PREVIOUS
  valueFrom:
    secretKeyRef:
      name: {{ include "a2ac.secretName" .root }}
      key: {{ $v.secret.keys.secretKeyPrevious }}
      optional: true
{{- if and $v.otel.headersSecret.name $v.otel.headersSecret.key }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ $v.otel.headersSecret.name }}
      key: {{ $v.otel.headersSecret.key }}
{{- end }}
- name: OTEL_SERVICE_NAME
  value: {{ .serviceName | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ include "a2ac.otelResourceAttributes" .root | quote }}
{{- end -}}

{{/* OTEL_RESOURCE_ATTRIBUTES; $(VAR) is expanded by the kubelet from the env vars above it. */}}
{{- define "a2ac.otelResourceAttributes" -}}
{{- $attrs := list (printf "service.version=%s" (include "a2ac.imageTag" .)) "service.namespace=a2a-connector" "k8s.namespace.name=$(K8S_NAMESPACE)" "k8s.pod.name=$(K8S_POD_NAME)" "k8s.node.name=$(K8S_NODE_NAME)" -}}
{{- range $k, $val := .Values.otel.resourceAttributes -}}
{{- $attrs = append $attrs (printf "%s=%v" $k $val) -}}
{{- end -}}
{{- join "," $attrs -}}
{{- end -}}

{{/* Default topology spread of a component over nodes and zones. */}}
{{- define "a2ac.topologySpread" -}}
{{- $c := .c -}}
{{- if $c.topologySpreadConstraints }}
{{- toYaml $c.topologySpreadConstraints }}
{{- else if .root.Values.defaultTopologySpread }}
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "a2ac.selectorLabels" . | nindent 6 }}
  matchLabelKeys:
    - pod-template-hash
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "a2ac.selectorLabels" . | nindent 6 }}
  matchLabelKeys:
    - pod-template-hash
{{- end }}
{{- end -}}

{{/* The preStop sleep of a component, when asked for and the cluster has the sleep action; on
an older cluster, a component called with "fold" (the connector) gets none: its drain delay
grows by the sleep (a2ac.drainDelay). */}}
{{- define "a2ac.lifecycle" -}}
{{- $sleep := int (default 0 .c.preStopSleepSeconds) -}}
{{- if gt $sleep 0 -}}
{{- if not (semverCompare ">=1.30.0-0" .root.Capabilities.KubeVersion.Version) -}}
{{- if not .fold -}}
{{- fail (printf "%s.preStopSleepSeconds needs Kubernetes >= 1.30 (the native sleep action; the image has no shell for `sleep`); this cluster is %s" .name .root.Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- else -}}
lifecycle:
  preStop:
    sleep:
      seconds: {{ $sleep }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Replicas: left out when an HPA owns them, so `helm upgrade` does not reset its count. */}}
{{- define "a2ac.replicas" -}}
{{- if not .autoscaling.enabled -}}
replicas: {{ .replicaCount }}
{{- end -}}
{{- end -}}

{{/* Key of the migration Job's DATABASE_URL in the Secret. */}}
{{- define "a2ac.migrationDatabaseUrlKey" -}}
{{- $s := .Values.secret -}}
{{- if or .Values.migration.separateDatabaseUrl (and (not $s.existingSecret) $s.migrationDatabaseUrl) -}}
{{- $s.keys.migrationDatabaseUrl -}}
{{- else -}}
{{- $s.keys.databaseUrl -}}
{{- end -}}
{{- end -}}

{{/*
The private CA bundle toward agents (agentCA): mounted at this folder, the file is its key.
*/}}
{{- define "a2ac.agentCADir" -}}
/etc/a2a-connector/agent-ca
{{- end -}}

{{/* Whether agentCA names a ConfigMap or a Secret. */}}
{{- define "a2ac.agentCAEnabled" -}}
{{- if or .Values.agentCA.configMap .Values.agentCA.secret -}}true{{- end -}}
{{- end -}}

{{/* A2AC_AGENT_CA_FILE of the long-running containers, when agentCA is set. */}}
{{- define "a2ac.agentCAEnv" -}}
{{- if include "a2ac.agentCAEnabled" . -}}
- name: A2AC_AGENT_CA_FILE
  value: {{ printf "%s/%s" (include "a2ac.agentCADir" .) .Values.agentCA.key | quote }}
{{- end -}}
{{- end -}}

{{/* The read-only mount of the agentCA volume (a container's volumeMounts entry). */}}
{{- define "a2ac.agentCAVolumeMount" -}}
{{- if include "a2ac.agentCAEnabled" . -}}
- name: agent-ca
  mountPath: {{ include "a2ac.agentCADir" . }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/*
The agentCA volume (a pod's volumes entry). Only the bundle's key is projected: a Secret such
as cert-manager's also holds tls.key, which has no business in these pods.
*/}}
{{- define "a2ac.agentCAVolume" -}}
{{- $ca := .Values.agentCA -}}
{{- if include "a2ac.agentCAEnabled" . -}}
- name: agent-ca
  {{- if $ca.configMap }}
  configMap:
    name: {{ $ca.configMap | quote }}
  {{- else }}
  secret:
    secretName: {{ $ca.secret | quote }}
  {{- end }}
    items:
      - key: {{ $ca.key | quote }}
        path: {{ $ca.key | quote }}
{{- end -}}
{{- end -}}
