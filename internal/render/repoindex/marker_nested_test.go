package repoindex

import "testing"

// TestParseMarkerNested checks a marker whose JSON object holds another
// object before the marker's key.
func TestParseMarkerNested(t *testing.T) {
	if got, ok := ParseMarker(`# {"note": {"by": "team"}, "$recommend": "shop/web:app"}`); got != "shop/web:app" || !ok {
		t.Errorf("ParseMarker = %q, %v; want shop/web:app", got, ok)
	}
}
