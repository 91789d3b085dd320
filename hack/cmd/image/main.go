// Command image writes the job's container image as an OCI image layout
// archive, from the static binary and with no Docker (see package
// hack/image):
//
//	go run ./hack/cmd/image -binary bin/recommend-job -o recommend-job.tar
//
// `make image` builds the binary and runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/recommend-job/recommend-job/hack/image"
)

func main() {
	var opts image.Options
	out := flag.String("o", "recommend-job.tar", "the archive to write")
	flag.StringVar(&opts.Binary, "binary", "", "the job's static Linux binary")
	flag.StringVar(&opts.CACertificates, "ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put in the image")
	flag.StringVar(&opts.Name, "name", "recommend-job:dev", "the image's reference name")
	flag.StringVar(&opts.Version, "version", "dev", "the job's version")
	flag.StringVar(&opts.Architecture, "arch", runtime.GOARCH, "the binary's architecture")
	flag.Parse()
	if err := write(*out, opts); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// write writes the archive next to out and renames it, so that a
// half-written archive is never taken for one.
func write(out string, opts image.Options) error {
	f, err := os.CreateTemp(filepath.Dir(out), ".image-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	d, err := image.Write(f, opts)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return err
	}
	fmt.Printf("%s: %s, manifest %s\n", out, opts.Name, d)
	return nil
}
