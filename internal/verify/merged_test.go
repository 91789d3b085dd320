package verify

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/recommend-job/recommend-job/internal/gitops"
	"github.com/recommend-job/recommend-job/internal/testbed/testbedtest"
)

// record is the job's record, holding pushed.
type record struct{ pushed []gitops.Pushed }

func (r *record) Load(context.Context) ([]gitops.Pushed, error) { return r.pushed, nil }

// pushAt commits changes, the trailers of a commit of the job's, to the
// main branch of the repository at url as committed at when, and returns
// its record.
func pushAt(t *testing.T, url, changes string, when time.Time) gitops.Pushed {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: url, ReferenceName: plumbing.NewBranchReferenceName("main")})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(changes), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("web.yaml"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "recommend-job", Email: "recommend-job@example.com", When: when}
	h, err := wt.Commit("Right-size resource requests\n\n"+changes, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return gitops.Pushed{Commit: h.String(), Branch: "main", Time: when, Changes: changes}
}

// TestReadMerged reads a base branch holding the job's changes of
// several ages: the look-back is LookBack, or a watch period and a
// window of history when longer; only changes within the watch are
// watched, and of the older ones a correction holds.
func TestReadMerged(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Hour)
	day := 24 * time.Hour
	url := testbedtest.FileRemote(t, map[string]string{"web.yaml": "\n"})
	rec := &record{}
	// Oldest first, as they were merged; one container each, so that
	// none replaces another.
	for _, c := range []struct {
		age     time.Duration
		trailer string
	}{
		{35 * day, "Recommend-Job-Change: shop/web old memory 512Mi 256Mi\n"},
		{20 * day, "Recommend-Job-Correction: shop/web corrected memory 256Mi 512Mi\n"},
		{20 * day, "Recommend-Job-Change: shop/web cut memory 512Mi 256Mi\n"},
		{2 * day, "Recommend-Job-Change: shop/web new memory 512Mi 256Mi\n"},
	} {
		rec.pushed = append(rec.pushed, pushAt(t, url, c.trailer, now.Add(-c.age)))
	}
	opts := gitops.Options{URL: url, BaseBranch: "main"}

	tests := []struct {
		name   string
		period time.Duration
		// since is how far back the base branch is read.
		since time.Duration
		// read, watched and holding are the containers of the changes
		// read, of those watched and of those that hold.
		read, watched, holding []string
	}{
		{name: "the default period reads back LookBack", period: DefaultPeriod, since: LookBack,
			read: []string{"new", "corrected", "cut"}, watched: []string{"new"}, holding: []string{"corrected"}},
		{name: "a period longer than LookBack less a window reads back a period and a window", period: 30 * day, since: 37 * day,
			read: []string{"new", "corrected", "cut", "old"}, watched: []string{"new", "corrected", "cut", "old"}, holding: []string{"corrected"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ReadMerged(context.Background(), rec, opts, nil, Thresholds{Period: tt.period}.WithDefaults(), now)
			if err != nil {
				t.Fatal(err)
			}
			if got := now.Sub(m.Since); got != tt.since {
				t.Errorf("read back %s, want %s", got, tt.since)
			}
			if len(m.Pushed) != len(rec.pushed) {
				t.Errorf("record of %d commits, want %d", len(m.Pushed), len(rec.pushed))
			}
			var read, watched, holding []string
			for _, c := range m.Latest {
				read = append(read, c.Container)
				if m.Watched(c) {
					watched = append(watched, c.Container)
				}
				if Holds(c, now) {
					holding = append(holding, c.Container)
				}
			}
			slices.Sort(read)
			slices.Sort(watched)
			slices.Sort(holding)
			for _, s := range [][]string{tt.read, tt.watched, tt.holding} {
				slices.Sort(s)
			}
			if !slices.Equal(read, tt.read) || !slices.Equal(watched, tt.watched) || !slices.Equal(holding, tt.holding) {
				t.Errorf("read %v, watched %v, holding %v; want %v, %v, %v", read, watched, holding, tt.read, tt.watched, tt.holding)
			}
		})
	}
}

// TestOffIsNotDefaultPeriod: a zero Period turns verification off, and
// WithDefaults never turns it into DefaultPeriod.
func TestOffIsNotDefaultPeriod(t *testing.T) {
	for _, tt := range []struct {
		th   Thresholds
		want bool
	}{
		{Thresholds{}, false},
		{Thresholds{Period: Off}.WithDefaults(), false},
		{Thresholds{Period: DefaultPeriod}, true},
		{Thresholds{Period: time.Hour}.WithDefaults(), true},
	} {
		if got := tt.th.Enabled(); got != tt.want {
			t.Errorf("%+v.Enabled() = %v, want %v", tt.th, got, tt.want)
		}
	}
	if got := (Thresholds{}).WithDefaults().Period; got != Off {
		t.Errorf("WithDefaults().Period = %s, want Off", got)
	}
}
