package helmtest

import (
	"maps"
	"slices"
	"strings"
)

// The fixture charts below are written as real charts are: names from a
// fullname helper based on the release name, the recommended labels, a
// Service, and values documented in values.yaml. Each function returns
// the chart's files by their path in the chart, Chart.yaml included.

// Resources is the chart "resources" 1.0.0: one Deployment, container
// app, whose resources are written whole from the values key resources,
// {} by default, as helm create writes them.
func Resources() map[string]string {
	return map[string]string{
		"Chart.yaml":                chartYAML("resources", "1.0.0", ""),
		"values.yaml":               resourcesValues,
		"templates/_helpers.tpl":    helpers("resources"),
		"templates/deployment.yaml": resourcesDeployment,
		"templates/service.yaml":    service("resources", "http"),
		"templates/NOTES.txt":       notes("resources"),
	}
}

const resourcesValues = `# Default values for resources.
replicaCount: 1

image:
  repository: registry.example.com/shop/app
  pullPolicy: IfNotPresent
  # Overrides the image tag whose default is the chart appVersion.
  tag: ""

nameOverride: ""
fullnameOverride: ""

podAnnotations: {}
podLabels: {}

service:
  type: ClusterIP
  port: 80

# We leave the resources to the operator.
resources: {}
  # limits:
  #   cpu: 100m
  #   memory: 128Mi
  # requests:
  #   cpu: 100m
  #   memory: 128Mi

nodeSelector: {}
tolerations: []
affinity: {}
`

const resourcesDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "resources.fullname" . }}
  labels:
    {{- include "resources.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "resources.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      {{- with .Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      labels:
        {{- include "resources.labels" . | nindent 8 }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
`

// Components is the chart "components" 2.3.1: Deployments web and worker
// sized by web.resources and worker.resources, sidecars of web from the
// list sidecars, each with its resources, and pod annotations written one
// by one from the podAnnotations mapping.
func Components() map[string]string {
	return map[string]string{
		"Chart.yaml":                       chartYAML("components", "2.3.1", ""),
		"values.yaml":                      componentsValues,
		"templates/_helpers.tpl":           helpers("components"),
		"templates/web-deployment.yaml":    componentsWeb,
		"templates/worker-deployment.yaml": componentsWorker,
		"templates/service.yaml":           service("components", "http"),
		"templates/NOTES.txt":              notes("components"),
	}
}

const componentsValues = `nameOverride: ""
fullnameOverride: ""

image:
  repository: registry.example.com/shop/storefront
  tag: ""
  pullPolicy: IfNotPresent

podAnnotations:
  prometheus.io/scrape: "true"
  prometheus.io/port: "9090"

web:
  replicaCount: 2
  port: 8080
  resources:
    requests:
      cpu: 250m
      memory: 256Mi
    limits:
      memory: 512Mi

worker:
  replicaCount: 1
  queue: orders
  resources:
    requests:
      cpu: 500m
      memory: 512Mi

# Extra containers of the web pods.
sidecars:
  - name: log-shipper
    image: registry.example.com/tools/log-shipper:1.4.2
    resources:
      requests:
        cpu: 50m
        memory: 64Mi

service:
  type: ClusterIP
  port: 80
`

const componentsWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "components.fullname" . }}-web
  labels:
    {{- include "components.labels" . | nindent 4 }}
    app.kubernetes.io/component: web
spec:
  replicas: {{ .Values.web.replicaCount }}
  selector:
    matchLabels:
      {{- include "components.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: web
  template:
    metadata:
      annotations:
        {{- range $key, $value := .Values.podAnnotations }}
        {{ $key }}: {{ $value | quote }}
        {{- end }}
      labels:
        {{- include "components.selectorLabels" . | nindent 8 }}
        app.kubernetes.io/component: web
    spec:
      containers:
        - name: web
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args: ["serve", "--port={{ .Values.web.port }}"]
          ports:
            - name: http
              containerPort: {{ .Values.web.port }}
          resources:
            {{- toYaml .Values.web.resources | nindent 12 }}
        {{- range .Values.sidecars }}
        - name: {{ .name }}
          image: {{ .image }}
          resources:
            {{- toYaml .resources | nindent 12 }}
        {{- end }}
`

const componentsWorker = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "components.fullname" . }}-worker
  labels:
    {{- include "components.labels" . | nindent 4 }}
    app.kubernetes.io/component: worker
spec:
  replicas: {{ .Values.worker.replicaCount }}
  selector:
    matchLabels:
      {{- include "components.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: worker
  template:
    metadata:
      annotations:
        {{- range $key, $value := .Values.podAnnotations }}
        {{ $key }}: {{ $value | quote }}
        {{- end }}
      labels:
        {{- include "components.selectorLabels" . | nindent 8 }}
        app.kubernetes.io/component: worker
    spec:
      containers:
        - name: worker
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          args: ["work", "--queue={{ .Values.worker.queue }}"]
          resources:
            {{- toYaml .Values.worker.resources | nindent 12 }}
`

// Scalar is the chart "scalar" 0.4.0: a Deployment, container server,
// whose requests and limits are four scalar keys written one by one;
// cpuLimit is not in values.yaml, the template defaults it to 500m.
func Scalar() map[string]string {
	return map[string]string{
		"Chart.yaml":                chartYAML("scalar", "0.4.0", ""),
		"values.yaml":               scalarValues,
		"templates/_helpers.tpl":    helpers("scalar"),
		"templates/deployment.yaml": scalarDeployment,
		"templates/service.yaml":    service("scalar", "http"),
	}
}

const scalarValues = `nameOverride: ""
fullnameOverride: ""
replicaCount: 1
image:
  repository: registry.example.com/infra/server
  tag: "3.2.1"
cpuRequest: 100m
memoryRequest: 128Mi
memoryLimit: 256Mi
# cpuLimit: 500m
service:
  type: ClusterIP
  port: 80
`

const scalarDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "scalar.fullname" . }}
  labels:
    {{- include "scalar.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "scalar.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "scalar.selectorLabels" . | nindent 8 }}
    spec:
      containers:
        - name: server
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          resources:
            requests:
              cpu: {{ .Values.cpuRequest | quote }}
              memory: {{ .Values.memoryRequest | quote }}
            limits:
              cpu: {{ .Values.cpuLimit | default "500m" | quote }}
              memory: {{ .Values.memoryLimit | quote }}
`

// Hardcoded is the chart "hardcoded" 1.1.0: a Deployment, container app,
// whose requests and limits are written in the template.
func Hardcoded() map[string]string {
	return map[string]string{
		"Chart.yaml":                chartYAML("hardcoded", "1.1.0", ""),
		"values.yaml":               hardcodedValues,
		"templates/_helpers.tpl":    helpers("hardcoded"),
		"templates/deployment.yaml": hardcodedDeployment,
		"templates/service.yaml":    service("hardcoded", "http"),
	}
}

const hardcodedValues = `nameOverride: ""
fullnameOverride: ""
replicaCount: 1
image:
  repository: registry.example.com/legacy/app
  tag: "1.0"
service:
  type: ClusterIP
  port: 80
`

const hardcodedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "hardcoded.fullname" . }}
  labels:
    {{- include "hardcoded.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "hardcoded.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "hardcoded.selectorLabels" . | nindent 8 }}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
            limits:
              memory: 256Mi
`

// Shared is the chart "shared" 0.2.0: a Deployment whose containers app
// and proxy are both sized by the one key resources.
func Shared() map[string]string {
	return map[string]string{
		"Chart.yaml":                chartYAML("shared", "0.2.0", ""),
		"values.yaml":               sharedValues,
		"templates/_helpers.tpl":    helpers("shared"),
		"templates/deployment.yaml": sharedDeployment,
		"templates/service.yaml":    service("shared", "http"),
	}
}

const sharedValues = `nameOverride: ""
fullnameOverride: ""
image:
  repository: registry.example.com/shop/app
  tag: "2.0"
proxy:
  image: registry.example.com/infra/envoy:1.30
resources:
  requests:
    cpu: 200m
    memory: 256Mi
service:
  type: ClusterIP
  port: 80
`

const sharedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "shared.fullname" . }}
  labels:
    {{- include "shared.labels" . | nindent 4 }}
spec:
  selector:
    matchLabels:
      {{- include "shared.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "shared.selectorLabels" . | nindent 8 }}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
        - name: proxy
          image: {{ .Values.proxy.image }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
`

// Strict is the chart "strict" 1.0.0: the Resources chart's Deployment
// with a values.schema.json that allows no key it does not list, at the
// top and in image and resources, and wants replicaCount a positive
// integer.
func Strict() map[string]string {
	files := Resources()
	files["Chart.yaml"] = chartYAML("strict", "1.0.0", "")
	files["templates/_helpers.tpl"] = helpers("strict")
	for _, name := range []string{"templates/deployment.yaml", "templates/service.yaml", "templates/NOTES.txt"} {
		files[name] = strings.ReplaceAll(files[name], `"resources.`, `"strict.`)
	}
	files["values.schema.json"] = strictSchema
	return files
}

const strictSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "replicaCount": {"type": "integer", "minimum": 1},
    "image": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "repository": {"type": "string"},
        "pullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
        "tag": {"type": "string"}
      }
    },
    "nameOverride": {"type": "string"},
    "fullnameOverride": {"type": "string"},
    "podAnnotations": {"type": "object"},
    "podLabels": {"type": "object"},
    "service": {"type": "object"},
    "resources": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "requests": {"$ref": "#/definitions/quantities"},
        "limits": {"$ref": "#/definitions/quantities"}
      }
    },
    "nodeSelector": {"type": "object"},
    "tolerations": {"type": "array"},
    "affinity": {"type": "object"}
  },
  "definitions": {
    "quantities": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "cpu": {"type": ["string", "number"]},
        "memory": {"type": "string"}
      }
    }
  }
}
`

// Profiles is the chart "profiles" 3.0.0: a Deployment, container api,
// whose requests come from the profile that the key profile names among
// profiles (profiles.small.cpu by default); the template fails, with
// required or fail, for a profile that is not there, an updateStrategy
// that is neither RollingUpdate nor Recreate, or a key of persistence it
// does not know.
func Profiles() map[string]string {
	return map[string]string{
		"Chart.yaml":                chartYAML("profiles", "3.0.0", ""),
		"values.yaml":               profilesValues,
		"templates/_helpers.tpl":    helpers("profiles"),
		"templates/deployment.yaml": profilesDeployment,
		"templates/pvc.yaml":        profilesPVC,
		"templates/service.yaml":    service("profiles", "http"),
	}
}

const profilesValues = `nameOverride: ""
fullnameOverride: ""
image:
  repository: registry.example.com/shop/api
  tag: "5.1.0"
# profile names the entry of profiles that sizes the pods.
profile: small
profiles:
  small:
    cpu: 100m
    memory: 128Mi
  large:
    cpu: "2"
    memory: 4Gi
updateStrategy: RollingUpdate
persistence:
  enabled: false
  size: 8Gi
service:
  type: ClusterIP
  port: 80
`

const profilesDeployment = `{{- $profile := required (printf "profile %q is not one of profiles" .Values.profile) (index .Values.profiles .Values.profile) }}
{{- if not (has .Values.updateStrategy (list "RollingUpdate" "Recreate")) }}
{{- fail (printf "updateStrategy %q must be RollingUpdate or Recreate" .Values.updateStrategy) }}
{{- end }}
{{- range $key, $_ := .Values.persistence }}
{{- if not (has $key (list "enabled" "size" "storageClass")) }}
{{- fail (printf "persistence.%s is not a setting of this chart" $key) }}
{{- end }}
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "profiles.fullname" . }}
  labels:
    {{- include "profiles.labels" . | nindent 4 }}
spec:
  strategy:
    type: {{ .Values.updateStrategy }}
  selector:
    matchLabels:
      {{- include "profiles.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "profiles.selectorLabels" . | nindent 8 }}
    spec:
      containers:
        - name: api
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          resources:
            requests:
              cpu: {{ $profile.cpu | quote }}
              memory: {{ $profile.memory | quote }}
          {{- if .Values.persistence.enabled }}
          volumeMounts:
            - name: data
              mountPath: /data
          {{- end }}
      {{- if .Values.persistence.enabled }}
      volumes:
        - name: data
          persistentVolumeClaim:
            claimName: {{ include "profiles.fullname" . }}
      {{- end }}
`

const profilesPVC = `{{- if .Values.persistence.enabled }}
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ include "profiles.fullname" . }}
  labels:
    {{- include "profiles.labels" . | nindent 4 }}
spec:
  accessModes: ["ReadWriteOnce"]
  {{- with .Values.persistence.storageClass }}
  storageClassName: {{ . }}
  {{- end }}
  resources:
    requests:
      storage: {{ .Values.persistence.size }}
{{- end }}
`

// Random is the chart "random" 0.1.0: the Resources chart's Deployment
// and a Secret whose password is generated anew at each render, as many
// charts generate one when none is given.
func Random() map[string]string {
	files := Resources()
	files["Chart.yaml"] = chartYAML("random", "0.1.0", "")
	files["templates/_helpers.tpl"] = helpers("random")
	for _, name := range []string{"templates/deployment.yaml", "templates/service.yaml", "templates/NOTES.txt"} {
		files[name] = strings.ReplaceAll(files[name], `"resources.`, `"random.`)
	}
	files["templates/secret.yaml"] = `apiVersion: v1
kind: Secret
metadata:
  name: {{ include "random.fullname" . }}
  labels:
    {{- include "random.labels" . | nindent 4 }}
type: Opaque
data:
  password: {{ .Values.password | default (randAlphaNum 24) | b64enc | quote }}
`
	return files
}

// Umbrella is the chart "umbrella" 1.0.0: no template of its own, and the
// Scalar chart as its dependency under the alias batch, so that its keys
// are batch.cpuRequest and so on.
func Umbrella() map[string]string {
	files := map[string]string{
		"Chart.yaml": chartYAML("umbrella", "1.0.0", `dependencies:
  - name: scalar
    version: 0.4.0
    alias: batch
`),
		"values.yaml": `batch:
  cpuRequest: 300m
`,
	}
	for name, data := range Scalar() {
		files["charts/scalar/"+name] = data
	}
	return files
}

// fixtures are the charts Files knows, by name.
var fixtures = map[string]func() map[string]string{
	"resources":  Resources,
	"components": Components,
	"scalar":     Scalar,
	"hardcoded":  Hardcoded,
	"shared":     Shared,
	"strict":     Strict,
	"profiles":   Profiles,
	"random":     Random,
	"umbrella":   Umbrella,
}

// Names lists the fixture charts Files knows, in order.
func Names() []string {
	return slices.Sorted(maps.Keys(fixtures))
}

// Files returns the files of the fixture chart name as bytes, for loading
// with helm.NewChart; nil for a name it does not know.
func Files(name string) map[string][]byte {
	files, ok := fixtures[name]
	if !ok {
		return nil
	}
	return Bytes(files())
}

// Bytes converts chart files to bytes.
func Bytes(files map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(files))
	for name, data := range files {
		out[name] = []byte(data)
	}
	return out
}

// chartYAML is a Chart.yaml of an application chart, with extra appended.
func chartYAML(name, version, extra string) string {
	return "apiVersion: v2\nname: " + name + "\ndescription: A Helm chart for Kubernetes\ntype: application\nversion: " + version +
		"\nappVersion: \"" + version + "\"\n" + extra
}

// helpers is the _helpers.tpl helm create writes, for chart name.
func helpers(name string) string {
	return strings.ReplaceAll(`{{/*
Expand the name of the chart.
*/}}
{{- define "CHART.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Create a default fully qualified app name.
If release name contains chart name it will be used as a full name.
*/}}
{{- define "CHART.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Create chart name and version as used by the chart label.
*/}}
{{- define "CHART.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels
*/}}
{{- define "CHART.labels" -}}
helm.sh/chart: {{ include "CHART.chart" . }}
{{ include "CHART.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Selector labels
*/}}
{{- define "CHART.selectorLabels" -}}
app.kubernetes.io/name: {{ include "CHART.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
`, "CHART", name)
}

// service is the Service helm create writes, for chart name, to the
// named container port.
func service(name, port string) string {
	return strings.ReplaceAll(strings.ReplaceAll(`apiVersion: v1
kind: Service
metadata:
  name: {{ include "CHART.fullname" . }}
  labels:
    {{- include "CHART.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  ports:
    - port: {{ .Values.service.port }}
      targetPort: PORT
      protocol: TCP
      name: http
  selector:
    {{- include "CHART.selectorLabels" . | nindent 4 }}
`, "CHART", name), "PORT", port)
}

// notes is a NOTES.txt, which is not a manifest.
func notes(name string) string {
	return strings.ReplaceAll(`Get the application URL by running these commands:
  kubectl --namespace {{ .Release.Namespace }} port-forward service/{{ include "CHART.fullname" . }} 8080:{{ .Values.service.port }}
`, "CHART", name)
}
