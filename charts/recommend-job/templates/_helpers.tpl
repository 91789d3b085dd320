{{- define "recommend-job.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "recommend-job.serviceAccountName" -}}
{{- default (include "recommend-job.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "recommend-job.selectorLabels" -}}
app.kubernetes.io/name: recommend-job
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "recommend-job.labels" -}}
{{ include "recommend-job.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The distinct Secrets of secretFiles, as a JSON array: one volume each. */}}
{{- define "recommend-job.secretNames" -}}
{{- $names := list -}}
{{- range .Values.secretFiles -}}
{{- $names = append $names .secretName -}}
{{- end -}}
{{- $names | uniq | toJson -}}
{{- end -}}

{{/*
The job's configuration file: config, with a run-timeout that ends the run
before activeDeadlineSeconds, so that it still prints its report and exits 3
instead of being killed. Unless config sets it, run-timeout is 90% of
activeDeadlineSeconds; a run-timeout in config must be a whole number of s, m
or h below activeDeadlineSeconds.
*/}}
{{- define "recommend-job.config" -}}
{{- $config := deepCopy (.Values.config | default dict) -}}
{{- $deadline := int .Values.activeDeadlineSeconds -}}
{{- with index $config "run-timeout" -}}
{{- $v := toString . -}}
{{- if not (regexMatch "^[0-9]+[smh]$" $v) -}}
{{- fail (printf "config.run-timeout: %q must be a whole number of s, m or h (e.g. 25m) to be checked against activeDeadlineSeconds" $v) -}}
{{- end -}}
{{- $seconds := mul (atoi (regexReplaceAll "[smh]$" $v "")) (get (dict "s" 1 "m" 60 "h" 3600) (regexFind "[smh]$" $v)) -}}
{{- if ge (int $seconds) $deadline -}}
{{- fail (printf "config.run-timeout: %s must be below activeDeadlineSeconds (%ds), or Kubernetes stops the run before it reports" $v $deadline) -}}
{{- end -}}
{{- else -}}
{{- $_ := set $config "run-timeout" (printf "%ds" (max 1 (div (mul $deadline 9) 10))) -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}
