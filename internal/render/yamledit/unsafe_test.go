package yamledit

import (
	"errors"
	"testing"
)

func TestUnsafeFileTemplates(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{name: "no template", in: "a: 1\n"},
		{name: "double-quoted value", in: "persistence:\n  config:\n    existingClaim: \"{{ .Release.Name }}\"\n"},
		{name: "single-quoted value", in: "args: ['{{ .Release.Name }}']\n"},
		{name: "plain value", in: "host: \"x\"\nname: app-{{ .Release.Name }}\n"},
		{name: "block scalar", in: "config: |\n  name: {{ .Release.Name }}\n  {{- if .Values.x }}\nnext: 1\n"},
		{name: "flow collection of values", in: "args: [\"{{ .Release.Name }}\", b]\n"},
		{name: "unquoted action reads as flow", in: "replicas: {{ .Values.replicas }}\n", want: ErrTemplate},
		{name: "key", in: "\"{{ .Release.Name }}\": 1\n", want: ErrTemplate},
		{name: "comment", in: "a: 1 # {{ .Release.Name }}\n", want: ErrTemplate},
		{name: "plain value over two lines", in: "a: x {{ .Release.Name }}\n  y\n", want: ErrTemplate},
		{name: "anchored value", in: "a: &n \"{{ .Release.Name }}\"\nb: *n\n", want: ErrTemplate},
		{name: "one of two documents", in: "a: \"{{ .x }}\"\n---\nb: {{ .y }}\n", want: ErrTemplate},
		{name: "sops", in: "a: 1\nsops:\n  mac: x\n", want: ErrUnsafe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := ParseDocuments([]byte(tt.in))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = UnsafeFile([]byte(tt.in), docs)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("UnsafeFile = %v, want nil", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("UnsafeFile = %v, want %v", err, tt.want)
			}
		})
	}
}
