{{- define "app.containers" -}}
{{- $root := index . 0 -}}
{{- range $name, $c := index . 1 }}
- name: {{ $name }}
  image: {{ printf "%s:%s" $c.image.repository $c.image.tag | quote }}
  {{- with $c.args }}
  args:
    {{- range . }}
    - {{ tpl . $root | quote }}
    {{- end }}
  {{- end }}
  {{- with $c.env }}
  env:
    {{- range $k, $v := . }}
    - name: {{ $k }}
      value: {{ tpl (toString $v) $root | quote }}
    {{- end }}
  {{- end }}
  {{- with $c.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}
