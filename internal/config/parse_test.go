package config

import "testing"

func TestParsePaths(t *testing.T) {
	got, err := parsePaths([]string{"shop=clusters/prod/shop", " web = apps/web/ "})
	if err != nil || len(got) != 2 || got["shop"] != "clusters/prod/shop" || got["web"] != "apps/web/" {
		t.Errorf("parsePaths = %v, %v", got, err)
	}
	for _, bad := range [][]string{{"shop"}, {"=apps"}, {"shop="}, {"shop=/abs"}, {"shop=../up"}, {"shop=a", "shop=b"}} {
		if _, err := parsePaths(bad); err == nil {
			t.Errorf("parsePaths(%q) accepted", bad)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"4Mi", 4 << 20, false},
		{"4194304", 4 << 20, false},
		{"500k", 500000, false},
		{" 1Gi ", 1 << 30, false},
		{"0", 0, true},
		{"-1Mi", 0, true},
		{"1.5", 0, true},
		{"4MB", 0, true},
		{"", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSize(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
