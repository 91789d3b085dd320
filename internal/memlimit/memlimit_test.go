package memlimit

import (
	"testing"
	"testing/fstest"
)

func TestContainer(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tt := range []struct {
		name      string
		cgroup    string
		files     fstest.MapFS
		want      int64
		wantFound bool
		wantErr   bool
	}{
		{
			name:   "v2 in a cgroup namespace: the root's",
			cgroup: "0::/\n",
			files:  fstest.MapFS{"memory.max": file("536870912\n")},
			want:   512 << 20, wantFound: true,
		},
		{
			name:   "v2, the pod's limit above the container's cgroup",
			cgroup: "0::/kubepods/burstable/pod1/c1\n",
			files: fstest.MapFS{
				"kubepods/burstable/pod1/c1/memory.max": file("max\n"),
				"kubepods/burstable/pod1/memory.max":    file("402653184\n"),
				"kubepods/memory.max":                   file("8589934592\n"),
			},
			want: 384 << 20, wantFound: true,
		},
		{
			name:   "v2 without a limit",
			cgroup: "0::/user.slice\n",
			files:  fstest.MapFS{"user.slice/memory.max": file("max\n")},
		},
		{
			name:   "v1's memory controller, among others",
			cgroup: "12:pids:/x\n4:memory:/process_api/abc\n0::/\n",
			files: fstest.MapFS{
				"memory/process_api/abc/memory.limit_in_bytes": file("9223372036854771712\n"),
				"memory/process_api/memory.limit_in_bytes":     file("1073741824\n"),
				"memory/memory.limit_in_bytes":                 file("9223372036854771712\n"),
				"memory.max":                                   file("268435456\n"),
			},
			want: 1 << 30, wantFound: true,
		},
		{
			name:   "v1 controllers joined on one line",
			cgroup: "5:cpu,memory:/\n",
			files:  fstest.MapFS{"memory/memory.limit_in_bytes": file("134217728")},
			want:   128 << 20, wantFound: true,
		},
		{
			name:   "no memory controller",
			cgroup: "3:cpu:/\n",
			files:  fstest.MapFS{},
		},
		{
			name:    "a limit that is no number",
			cgroup:  "0::/\n",
			files:   fstest.MapFS{"memory.max": file("lots\n")},
			wantErr: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proc := fstest.MapFS{"self/cgroup": file(tt.cgroup)}
			got, found, err := Container(tt.files, proc)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Container() error = %v, want an error: %t", err, tt.wantErr)
			}
			if got != tt.want || found != tt.wantFound {
				t.Errorf("Container() = %d, %t, want %d, %t", got, found, tt.want, tt.wantFound)
			}
		})
	}
}

func TestSoft(t *testing.T) {
	for _, tt := range []struct {
		limit, reserved, want int64
		ok                    bool
	}{
		{limit: 1 << 30, reserved: 256 << 20, want: 724775731, ok: true},
		{limit: 512 << 20, reserved: 0, want: 483183820, ok: true},
		// What a chart render leaves is too little to aim at.
		{limit: 300 << 20, reserved: 256 << 20},
		{limit: 128 << 20, reserved: 256 << 20},
	} {
		got, ok := Soft(tt.limit, tt.reserved)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Soft(%d, %d) = %d, %t, want %d, %t", tt.limit, tt.reserved, got, ok, tt.want, tt.ok)
		}
	}
}
