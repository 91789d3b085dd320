package markdown

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestProposedRoundTrip records values in a body line, reads them back,
// and tells whether new values moved past a threshold.
func TestProposedRoundTrip(t *testing.T) {
	v := Proposed{"shop/web/app/cpu": resource.MustParse("390m"), "shop/web/app/memory": resource.MustParse("200Mi"), "x/-->/evil/cpu": resource.MustParse("1")}
	line := v.Line()
	if strings.Count(line, "-->") != 1 || !strings.HasSuffix(line, " -->") {
		t.Fatalf("line %q: a name ended the comment", line)
	}
	got := ParseProposed("# Title\n\nbody\n" + line + "\n")
	if len(got) != len(v) {
		t.Fatalf("read back %v, want %v", got, v)
	}
	for k, q := range v {
		if g := got[k]; g.Cmp(q) != 0 {
			t.Errorf("%s: %v, want %v", k, &g, &q)
		}
	}
	tests := []struct {
		name string
		now  Proposed
		want bool
	}{
		{"the same", Proposed{"shop/web/app/cpu": resource.MustParse("0.39")}, false},
		{"within the threshold", Proposed{"shop/web/app/cpu": resource.MustParse("420m")}, false},
		{"past it, up", Proposed{"shop/web/app/cpu": resource.MustParse("450m")}, true},
		{"past it, down", Proposed{"shop/web/app/memory": resource.MustParse("150Mi")}, true},
		{"a value not proposed then", Proposed{"shop/api/app/cpu": resource.MustParse("1")}, true},
	}
	for _, tt := range tests {
		if moved := tt.now.Moved(got, 0.10); moved != tt.want {
			t.Errorf("%s: moved %v, want %v", tt.name, moved, tt.want)
		}
	}
	if ParseProposed("no marker here") != nil || ParseProposed(proposedPrefix+"!!! -->") != nil {
		t.Error("read values from a body without a valid line")
	}

	// A line of plain JSON, as earlier versions wrote it, reads the same.
	plain := proposedPrefix + base64.RawURLEncoding.EncodeToString([]byte(`{"shop/web/app/cpu":"390m"}`)) + " -->"
	if got, want := ParseProposed(plain), resource.MustParse("390m"); len(got) != 1 || want.Cmp(got["shop/web/app/cpu"]) != 0 {
		t.Errorf("plain line read as %v, want shop/web/app/cpu 390m", got)
	}
	// Anyone may edit a body: a line that inflates past the bound is not
	// read.
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestCompression)
	_, _ = w.Write([]byte(`{"` + strings.Repeat("k", maxProposedData) + `":"1"}`))
	_ = w.Close()
	if bomb := proposedPrefix + proposedDeflated + base64.RawURLEncoding.EncodeToString(b.Bytes()) + " -->"; len(bomb) > maxProposedLength || ParseProposed(bomb) != nil {
		t.Errorf("a line of %d characters that inflates past %d bytes was read", len(bomb), maxProposedData)
	}
}
