package yamledit

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// WriteFile replaces name under r with data through a temporary file and a
// rename, so that an interrupted run never leaves a truncated manifest.
func WriteFile(r *os.Root, name string, data []byte, perm fs.FileMode) error {
	target := filepath.FromSlash(name)
	dir, base := filepath.Split(target)
	// Hidden, so that a concurrent index skips it.
	tmp := filepath.Join(dir, "."+base+".render-"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err == nil {
		// OpenFile applied the umask; keep the original permissions.
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, target)
	}
	if err != nil {
		_ = r.Remove(tmp)
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
