package dist

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// builderImage returns the image the Dockerfile's build stage starts from.
//
// Users build FROM the golang image on a registry. This machine reaches no
// registry, so the test makes an equivalent from what is installed:
// podman import of one layer holding the host's Go toolchain at
// /usr/local/go (where the golang image keeps it), Debian's static busybox
// as the shell and the few commands the RUN steps use, and the host's CA
// bundle. The RUN steps then really run, in buildah's chroot isolation,
// which needs no OCI runtime. DIST_TEST_BUILDER names another builder (for
// example docker.io/library/golang:1.26.8-bookworm where a registry is
// reachable). The import is kept under a tag naming the Go version, so a
// later run reuses it.
func builderImage(t *testing.T, podman string) string {
	t.Helper()
	if b := os.Getenv("DIST_TEST_BUILDER"); b != "" {
		return b
	}
	tag := "localhost/delta-dist-builder:" + goEnv(t, "GOVERSION")
	if exec.Command(podman, "image", "exists", tag).Run() == nil {
		return tag
	}
	// The layer holds no libc, so the shell must be static: Debian's
	// busybox-static, not busybox.
	busybox := "/bin/busybox"
	if err := staticELF(busybox); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %v (apt-get install -y busybox-static; scripts/test installs it)", err)
		}
		t.Skipf("%v: a static busybox is the build stage's shell here (apt-get install -y busybox-static)", err)
	}
	goroot := goEnv(t, "GOROOT")

	cmd := exec.Command(podman, "import", //nolint:noctx // bounded by the tar it is fed; stdin closes when the tar is written
		"--change", "ENV PATH=/usr/local/go/bin:/go/bin:/bin",
		"--change", "ENV GOPATH=/go",
		"--change", "ENV HOME=/root",
		// The toolchain is the host's; never fetch another.
		"--change", "ENV GOTOOLCHAIN=local",
		"-", tag)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	werr := writeBuilderTree(stdin, goroot, busybox)
	if cerr := stdin.Close(); werr == nil {
		werr = cerr
	}
	if err := cmd.Wait(); err != nil || werr != nil {
		t.Fatalf("podman import of the builder: %v (writing the layer: %v)\n%s", err, werr, out.String())
	}
	t.Logf("builder image %s imported from %s and %s in %s", tag, goroot, busybox, time.Since(start).Round(time.Second))
	return tag
}

// writeBuilderTree writes the builder's one layer as a tar stream.
func writeBuilderTree(w io.Writer, goroot, busybox string) error {
	tw := tar.NewWriter(w)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: time.Unix(0, 0)})
	}
	for _, d := range []string{"bin", "etc", "etc/ssl", "etc/ssl/certs", "root", "usr", "usr/local", "go"} {
		if err := dir(d, 0o755); err != nil {
			return err
		}
	}
	if err := dir("tmp", 0o1777); err != nil {
		return err
	}
	if err := addFile(tw, "bin/busybox", busybox, 0o755); err != nil {
		return err
	}
	// The commands the Dockerfile's RUN steps use, busybox applets.
	for _, applet := range []string{"sh", "mkdir", "cp", "chmod", "chown", "printf"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "busybox", Mode: 0o777, ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
	}
	if err := addFile(tw, "etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt", 0o644); err != nil {
		return err
	}
	err := filepath.WalkDir(goroot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(goroot, p)
		if err != nil {
			return err
		}
		if rel == "test" && d.IsDir() {
			return filepath.SkipDir // the toolchain's own test suite; nothing builds from it
		}
		name := filepath.ToSlash(filepath.Join("usr/local/go", rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return dir(name, int64(info.Mode().Perm()))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: info.ModTime()})
		case info.Mode().IsRegular():
			return addFile(tw, name, p, int64(info.Mode().Perm()))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("walk %s: %w", goroot, err)
	}
	return tw.Close()
}

// addFile writes the file at src (following symlinks) as name.
func addFile(tw *tar.Writer, name, src string, mode int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return errors.New(src + " is not a regular file")
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: info.Size(), Mode: mode, ModTime: info.ModTime()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// staticELF reports why p is not a statically linked executable.
func staticELF(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New(p + " is dynamically linked")
		}
	}
	return nil
}
