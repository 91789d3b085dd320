package testbed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// chromiumPackage is Debian's Chromium; its binary has the same name.
const chromiumPackage = "chromium"

// chromiumTimeout bounds one page load, scripts included.
const chromiumTimeout = 2 * time.Minute

// Chromium is a headless Chromium that loads one page per call, each in
// a profile of its own that is removed afterwards.
type Chromium struct {
	Binary string
}

// EnsureChromium returns Debian's Chromium, installing its package when
// it is missing and the process runs as root.
func EnsureChromium(ctx context.Context) (Chromium, error) {
	if path, err := lookPath(chromiumPackage); err == nil {
		return Chromium{Binary: path}, nil
	}
	if err := installPackages(ctx, []string{chromiumPackage}); err != nil {
		return Chromium{}, err
	}
	path, err := lookPath(chromiumPackage)
	return Chromium{Binary: path}, err
}

// DOM loads url and returns its markup once its scripts have run, as far
// as a virtual time budget of budget lets them; frames' documents are
// not part of it.
func (c Chromium) DOM(ctx context.Context, url string, budget time.Duration) (string, error) {
	out, err := c.run(ctx, budget, "--dump-dom", url)
	if err != nil {
		return "", fmt.Errorf("load %s in chromium: %w", url, err)
	}
	return string(out), nil
}

// Screenshot loads url in a window of width x height CSS pixels and saves
// what it shows, once its scripts have run within budget, as a PNG at
// path, scale image pixels to a CSS pixel (below 1 for a smaller file).
func (c Chromium) Screenshot(ctx context.Context, url, path string, width, height int, scale float64, budget time.Duration) error {
	if _, err := c.run(ctx, budget, "--screenshot="+path, fmt.Sprintf("--window-size=%d,%d", width, height),
		fmt.Sprintf("--force-device-scale-factor=%g", scale), "--hide-scrollbars", url); err != nil {
		return fmt.Errorf("screenshot %s in chromium: %w", url, err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		return fmt.Errorf("screenshot %s in chromium: no picture written to %s", url, path)
	}
	return nil
}

// run starts Chromium headless, offline but for the page, with a new
// profile, and returns its standard output.
func (c Chromium) run(ctx context.Context, budget time.Duration, args ...string) ([]byte, error) {
	profile, err := os.MkdirTemp("", "testbed-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(ctx, chromiumTimeout)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile,
		fmt.Sprintf("--virtual-time-budget=%d", budget.Milliseconds()),
	}
	cmd := exec.CommandContext(ctx, c.Binary, append(base, args...)...)
	// Chromium keeps its caches under HOME; keep them in the profile.
	cmd.Env = append(EnvironWithout("HOME="), "HOME="+profile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, tailLines(withoutDBus(stderr.String()), logTailLines))
	}
	return stdout.Bytes(), nil
}

// withoutDBus drops the lines in which Chromium says it found no D-Bus,
// which a machine without a desktop never has: they would push what went
// wrong out of an error's tail.
func withoutDBus(log string) string {
	var keep []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, ":ERROR:dbus/") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
