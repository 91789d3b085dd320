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
