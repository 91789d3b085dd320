package helm

import (
	"testing"

	"github.com/recommend-job/recommend-job/internal/render/helm/helmtest"
)

func TestNewChart(t *testing.T) {
	files := helmtest.Files("components")
	c, err := NewChart("charts/components", files)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "components" || c.Version != "2.3.1" || c.Source != "charts/components" {
		t.Errorf("NewChart = %s %s from %s, want components 2.3.1 from charts/components", c.Name, c.Version, c.Source)
	}
	if len(c.Digest) != 64 {
		t.Errorf("Digest = %q, want 64 hex digits", c.Digest)
	}
	same, err := NewChart("elsewhere", helmtest.Files("components"))
	if err != nil {
		t.Fatal(err)
	}
	if same.Digest != c.Digest {
		t.Errorf("the same files give digests %s and %s", c.Digest, same.Digest)
	}
	files["values.yaml"] = append(files["values.yaml"], []byte("\nextra: 1\n")...)
	changed, err := NewChart("charts/components", files)
	if err != nil {
		t.Fatal(err)
	}
	if changed.Digest == c.Digest {
		t.Error("a changed values.yaml keeps the digest")
	}
	// A name's end and a content's start must not be interchangeable.
	a := FilesDigest(map[string][]byte{"ab": []byte("c")})
	b := FilesDigest(map[string][]byte{"a": []byte("bc")})
	if a == b {
		t.Error("files ab=c and a=bc give the same digest")
	}
}

func TestNewChartRefusesBadChart(t *testing.T) {
	_, err := NewChart("broken", map[string][]byte{"values.yaml": []byte("a: 1\n")})
	if err == nil {
		t.Fatal("NewChart loaded a chart without Chart.yaml")
	}
}
