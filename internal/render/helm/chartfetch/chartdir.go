package chartfetch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/ignore"

	"github.com/recommend-job/recommend-job/internal/render/helm"
)

// LoadDir loads the chart in directory dir of fsys, as helm would load
// it from disk: .helmignore is honoured, and subcharts under charts/,
// directories or .tgz archives, are loaded with it. dir is slash-separated
// and relative to fsys, which callers get from an os.Root of the
// repository so that links cannot lead out of it. At most
// MaxChartDirBytes are read.
//
// The chart's Source is dir. Its Digest is the hex sha256 of its file
// names and contents, in name order.
func LoadDir(fsys fs.FS, dir string) (*helm.Chart, error) {
	return loadChart(fsys, dir, nil)
}

// loadChart is the chart of loadDir, to render.
func loadChart(fsys fs.FS, dir string, remote remoteFetch) (*helm.Chart, error) {
	c, digest, err := loadDir(fsys, dir, nil, remote)
	if err != nil {
		return nil, err
	}
	return helm.NewLoadedChart(dir, digest, c), nil
}

// loadDir loads a chart directory and its digest, with the file://
// dependencies that its charts/ does not hold from the directories they
// name, as helm dependency build would; seen holds the directories on the way, against
// cycles. remote, when set, fetches the dependencies from chart
// repositories; without it they are left out, and rendering refuses the
// chart.
func loadDir(fsys fs.FS, dir string, seen []string, remote remoteFetch) (*chartv2.Chart, string, error) {
	if !fs.ValidPath(dir) {
		return nil, "", fmt.Errorf("load chart directory %q: not a slash-separated relative path", dir)
	}
	if slices.Contains(seen, dir) || len(seen) > maxDependencyDepth {
		return nil, "", fmt.Errorf("load chart directory %s: its file:// dependencies lead back to it", dir)
	}
	files, err := readChartDir(fsys, dir)
	if err != nil {
		return nil, "", fmt.Errorf("load chart directory %s: %w", dir, err)
	}
	digest := filesDigest(files)
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, "", fmt.Errorf("load chart directory %s: %w", dir, err)
	}
	for _, d := range c.Metadata.Dependencies {
		local, ok := strings.CutPrefix(d.Repository, "file://")
		if !ok || slices.ContainsFunc(c.Dependencies(), func(x *chartv2.Chart) bool { return x.Name() == d.Name }) {
			continue
		}
		sub := path.Join(dir, local)
		dep, depDigest, err := loadDir(fsys, sub, append(seen, dir), remote)
		if err != nil {
			return nil, "", fmt.Errorf("load chart directory %s: dependency %s: %w", dir, d.Name, err)
		}
		c.AddDependency(dep)
		sum := sha256.Sum256([]byte(digest + "\x00" + depDigest))
		digest = hex.EncodeToString(sum[:])
	}
	if remote != nil {
		deps, depsDigest, err := remote(files, c)
		if err != nil {
			return nil, "", fmt.Errorf("load chart directory %s: %w", dir, err)
		}
		for _, dep := range deps {
			c.AddDependency(dep)
		}
		if len(deps) > 0 {
			sum := sha256.Sum256([]byte(digest + "\x00" + depsDigest))
			digest = hex.EncodeToString(sum[:])
		}
	}
	return c, digest, nil
}

// maxDependencyDepth bounds how deep file:// dependencies are followed.
const maxDependencyDepth = 8

// utf8BOM is dropped from the start of files, as helm does.
const utf8BOM = "\xEF\xBB\xBF"

// readChartDir reads the files of the chart directory dir that
// .helmignore keeps, named relative to dir, within MaxChartDirBytes.
func readChartDir(fsys fs.FS, dir string) ([]*archive.BufferedFile, error) {
	info, err := fs.Stat(fsys, dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, errors.New("not a directory")
	}
	rules, err := readIgnoreRules(fsys, dir)
	if err != nil {
		return nil, err
	}

	budget := &byteBudget{left: MaxChartDirBytes}
	var files []*archive.BufferedFile
	err = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		name := strings.TrimPrefix(p, dir+"/")
		if dir == "." {
			name = p
		}
		info, err := fs.Stat(fsys, p) // follows a link, as helm does
		if err != nil {
			return err
		}
		if rules.Ignore(name, info) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return nil
		case info.IsDir():
			return fmt.Errorf("%s: a link to a directory is not supported", name)
		case !info.Mode().IsRegular():
			return fmt.Errorf("%s: not a regular file", name)
		}
		data, err := budget.read(fsys, p, info.Size())
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		data = bytes.TrimPrefix(data, []byte(utf8BOM))
		files = append(files, &archive.BufferedFile{Name: name, ModTime: info.ModTime(), Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// readIgnoreRules returns the rules of dir's .helmignore, if any, and
// helm's defaults.
func readIgnoreRules(fsys fs.FS, dir string) (*ignore.Rules, error) {
	rules := ignore.Empty()
	budget := &byteBudget{left: MaxChartDirBytes}
	data, err := budget.read(fsys, path.Join(dir, ignore.HelmIgnore), -1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", ignore.HelmIgnore, err)
	default:
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("parse %s: %w", ignore.HelmIgnore, err)
		}
	}
	rules.AddDefaults()
	return rules, nil
}

// byteBudget is what is left to read of a chart directory.
type byteBudget struct{ left int64 }

// read reads file p of fsys and takes its length from the budget. size
// is what the file says it holds, or -1; the budget is checked on what is
// actually read too, as a file can grow.
func (b *byteBudget) read(fsys fs.FS, p string, size int64) ([]byte, error) {
	if size > b.left {
		return nil, b.exceeded()
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	data, err := io.ReadAll(io.LimitReader(f, b.left+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > b.left {
		return nil, b.exceeded()
	}
	b.left -= int64(len(data))
	return data, nil
}

func (b *byteBudget) exceeded() error {
	return fmt.Errorf("%w: the chart's files hold more than %d MiB", ErrTooLarge, MaxChartDirBytes>>20)
}

// filesDigest is digestFiles of buffered files.
func filesDigest(files []*archive.BufferedFile) string {
	m := make(map[string][]byte, len(files))
	for _, f := range files {
		m[f.Name] = f.Data
	}
	return helm.FilesDigest(m)
}
