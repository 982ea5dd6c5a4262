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
An image by its key in .Values.images: <image.registry>/<name>:<tag, default the chart's appVersion>,
and @<digest> when one is given (a release gives every image's). Called as (list $ "memoryScaler").
*/}}
{{- define "appmonitor.image" -}}
{{- $root := index . 0 }}
{{- $image := index $root.Values.images (index . 1) }}
{{- $ref := printf "%s/%s:%s" (trimSuffix "/" $root.Values.image.registry) $image.name (default $root.Chart.AppVersion $image.tag) }}
{{- if $image.digest }}{{ printf "%s@%s" $ref $image.digest }}{{ else }}{{ $ref }}{{ end }}
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

{{- /* Whether to render knative/monitoring/'s objects: .Values.monitoring.enabled, true when absent. */}}
{{- define "appmonitor.monitoringEnabled" -}}
{{- if dig "enabled" true (.Values.monitoring | default dict) }}true{{ end }}
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
