{{- /*
The chart's named templates. The templates beside this file that say "Generated" come from
knative/ (scripts/release/build-chart.ts); these, the webhook Secret, the scoped RBAC and NOTES.txt
are the chart's own.
*/}}

{{- /* Helm's labels on every object the chart installs. */}}
{{- define "appmonitor.labels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- /*
A value by its path under .Values, as text; when a key on the path is absent (values kept by helm
upgrade --reuse-values from a chart before the key, which replaces this chart's values.yaml with the
last release's), this chart's default from "appmonitor.defaults" (templates/_defaults.tpl, written
from values.yaml). Called as (list $ "dashboard" "enabled").
*/}}
{{- define "appmonitor.value" -}}
{{- $value := (index . 0).Values }}
{{- $default := include "appmonitor.defaults" (index . 0) | fromJson }}
{{- $found := true }}
{{- range $key := rest . }}
{{- if and $found (kindIs "map" $value) (hasKey $value $key) }}{{ $value = index $value $key }}{{ else }}{{ $found = false }}{{ end }}
{{- $default = index $default $key }}
{{- end }}
{{- if $found }}{{ $value }}{{ else }}{{ $default }}{{ end }}
{{- end }}

{{- /*
Whether the values were written for 0.2.0 (its values.yaml, or kept from a 0.2.0 release by helm
upgrade --reuse-values): they hold images.eventDisplay, that version's dead-letter sink (Knative's
event_display), which no later values have. Then images.eventDisplay and resources.deadLetter
(sized for event_display) are ignored; NOTES.txt says so.
*/}}
{{- define "appmonitor.valuesOf020" -}}
{{- if hasKey (.Values.images | default dict) "eventDisplay" }}true{{ end }}
{{- end }}

{{- /*
A workload's requests and limits by its key in .Values.resources, as YAML: this chart's default
when absent, and for the dead-letter sink when the values are 0.2.0's ("appmonitor.valuesOf020").
Called as (list $ "deadLetter").
*/}}
{{- define "appmonitor.resources" -}}
{{- $root := index . 0 }}
{{- $key := index . 1 }}
{{- $defaults := (include "appmonitor.defaults" $root | fromJson).resources }}
{{- if and (eq $key "deadLetter") (include "appmonitor.valuesOf020" $root) }}
{{- toYaml (index $defaults $key) }}
{{- else }}
{{- toYaml (index ($root.Values.resources | default dict) $key | default (index $defaults $key)) }}
{{- end }}
{{- end }}

{{- /*
An image by its key in .Values.images: <image.registry>/<name>:<tag>@<digest>. A tag set is used
with the digest set beside it (none: by tag alone); no tag is the chart's appVersion, pinned by the
digest the release wrote into Chart.yaml's annotation appmonitor.kubedemo.com/image-digests (none
in a chart built from a clone: by tag alone). So values kept from an older release (helm upgrade
--reuse-values), which hold that release's digests, still get this chart's images; NOTES.txt names
a digest so ignored. Called as (list $ "memoryScaler").
*/}}
{{- define "appmonitor.image" -}}
{{- $root := index . 0 }}
{{- $key := index . 1 }}
{{- $name := include "appmonitor.value" (list $root "images" $key "name") }}
{{- $tag := include "appmonitor.value" (list $root "images" $key "tag") }}
{{- $digest := include "appmonitor.value" (list $root "images" $key "digest") }}
{{- if not $tag }}
{{- $tag = $root.Chart.AppVersion }}
{{- $digest = include "appmonitor.pinnedDigest" (list $root $key) }}
{{- end }}
{{- $ref := printf "%s/%s:%s" (trimSuffix "/" $root.Values.image.registry) $name $tag }}
{{- if $digest }}{{ printf "%s@%s" $ref $digest }}{{ else }}{{ $ref }}{{ end }}
{{- end }}

{{- /* The digest the release pinned for an image key (Chart.yaml's annotation), or "". Called as (list $ "memoryScaler"). */}}
{{- define "appmonitor.pinnedDigest" -}}
{{- $pins := index ((index . 0).Chart.Annotations | default dict) "appmonitor.kubedemo.com/image-digests" | default "{}" | fromJson }}
{{- index $pins (index . 1) | default "" }}
{{- end }}

{{- /* The Secret that holds the webhook token alert-receiver requires and Alertmanager sends. */}}
{{- define "appmonitor.webhookSecretName" -}}
{{- default "appmonitor-webhook" .Values.webhook.existingSecret }}
{{- end }}

{{- /*
The kube-prometheus-stack release's name, .Values.prometheusRelease; for values kept from a
release before it (helm upgrade --reuse-values), ruleLabels' release.
*/}}
{{- define "appmonitor.prometheusRelease" -}}
{{- if hasKey .Values "prometheusRelease" }}{{ .Values.prometheusRelease }}{{ else }}{{ dig "release" "" (.Values.ruleLabels | default dict) }}{{ end }}
{{- end }}

{{- /*
An install-wide ceiling by its key in .Values.ceilings, as text: "" when unset, and when absent (values
kept from a release before the ceilings, helm upgrade --reuse-values). Called as (list $ "maxMemory").
*/}}
{{- define "appmonitor.ceiling" -}}
{{- dig (index . 1) "" ((index . 0).Values.ceilings | default dict) | toString }}
{{- end }}

{{- /*
Whether to render one of knative/monitoring/'s objects: .Values.monitoring.enabled and
.Values.monitoring.<toggle>.enabled (podMonitor, selfAlerts), each true when absent (values kept
from a release before them). Called as (list $ "podMonitor"); "true" or "".
*/}}
{{- define "appmonitor.monitoringEnabled" -}}
{{- $monitoring := (index . 0).Values.monitoring | default dict }}
{{- if and (dig "enabled" true $monitoring) (dig (index . 1) "enabled" true $monitoring) }}true{{ end }}
{{- end }}

{{- /*
A workload's replicas by its key in .Values.replicas, or the given default (knative/'s) when unset
or null (also when absent: values kept from a release before it). Called as (list $ "ruleSync" 1).
*/}}
{{- define "appmonitor.replicas" -}}
{{- $replicas := (index . 0).Values.replicas | default dict }}
{{- $n := index $replicas (index . 1) }}
{{- if kindIs "invalid" $n }}{{ index . 2 }}{{ else }}{{ $n | int }}{{ end }}
{{- end }}

{{- /*
The scheduling values every Pod the chart makes carries (the functions' and helm test's), each
only when set: imagePullSecrets, nodeSelector, tolerations, affinity, priorityClassName.
*/}}
{{- define "appmonitor.podScheduling" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- end }}

{{- /* The Prometheus helm test asks for the self-alerts: prometheusUrl, or "" (no check) with monitoring.selfAlerts off. */}}
{{- define "appmonitor.testPrometheusUrl" -}}
{{- if include "appmonitor.monitoringEnabled" (list . "selfAlerts") }}{{ .Values.prometheusUrl }}{{ end }}
{{- end }}

{{- /*
RULE_LABELS: release=<appmonitor.prometheusRelease> when set, and .Values.ruleLabels (which win):
key=value pairs, sorted, joined by commas.
*/}}
{{- define "appmonitor.ruleLabels" -}}
{{- $labels := dict }}
{{- with include "appmonitor.prometheusRelease" . }}{{ $_ := set $labels "release" . }}{{ end }}
{{- $labels = merge (deepCopy .Values.ruleLabels) $labels }}
{{- $pairs := list }}
{{- range $key := keys $labels | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%s" $key (index $labels $key)) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{- /* ALERT_SEVERITY from .Values.alertSeverity, refusing info (values.yaml says why) with a message the schema cannot give. */}}
{{- define "appmonitor.alertSeverity" -}}
{{- if eq .Values.alertSeverity "info" }}
{{- fail "alertSeverity: info is inhibited by kube-prometheus-stack's default Alertmanager configuration (InfoInhibitor), so the alerts would never reach alert-receiver; use warning or critical" }}
{{- end }}
{{- .Values.alertSeverity }}
{{- end }}

{{- /*
ALLOW_UNVERIFIED_ALERTS from .Values.allowUnverifiedAlerts (false when absent, as in values kept
from a release before it), refusing an empty prometheusUrl without it or pauseScaling: memory-scaler
would refuse to start (values.yaml says why), so the install fails here, with a message.
*/}}
{{- define "appmonitor.allowUnverifiedAlerts" -}}
{{- $allow := .Values.allowUnverifiedAlerts | default false }}
{{- if not (or .Values.prometheusUrl .Values.pauseScaling $allow) }}
{{- fail "prometheusUrl is empty: memory-scaler would scale on every alert it is sent, unchecked against Prometheus, so it refuses to start; set prometheusUrl to your Prometheus, or allowUnverifiedAlerts=true to scale unchecked" }}
{{- end }}
{{- $allow }}
{{- end }}

{{- /* The ApiServerSource's namespaceSelector: every namespace, or the watched ones. */}}
{{- define "appmonitor.namespaceSelector" -}}
{{- if .Values.watchNamespaces }}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: In
    values: {{ toJson .Values.watchNamespaces }}
{{- else }}
{}
{{- end }}
{{- end }}

{{- /* Whether to render knative/network/'s NetworkPolicies: .Values.networkPolicies.enabled, true when absent. */}}
{{- define "appmonitor.networkPoliciesEnabled" -}}
{{- if dig "enabled" true (.Values.networkPolicies | default dict) }}true{{ end }}
{{- end }}

{{- /* REQUIRE_SENDER_IDENTITY from .Values.requireSenderIdentity: "true" or "false" (false when absent). */}}
{{- define "appmonitor.requireSenderIdentity" -}}
{{- if .Values.requireSenderIdentity }}true{{ else }}false{{ end }}
{{- end }}
