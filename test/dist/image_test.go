package dist

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/x509"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/test/daemontest"
)

const (
	imageTag     = "localhost/delta:dist-test"
	buildLabel   = "dist-test-build" // DELTA_BUILD
	stampVersion = "0.0.0-dist-test" // DELTA_VERSION, stamped into the binary
	// imageUID is the runtime user the Dockerfile declares.
	imageUID, imageGID = 10001, 10001
	litestreamVersion  = "v0.5.18"
	seedSelf           = "# Dist test agent\n\nYou answer briefly.\n"
)

// imageFiles is every regular file the image may hold, and so everything
// it does: no shell, no package manager, no coding CLI.
var imageFiles = []string{
	"/etc/delta/litestream.yml",
	"/etc/group",
	"/etc/passwd",
	"/etc/ssl/certs/ca-certificates.crt",
	"/usr/local/bin/delta",
	"/usr/local/bin/litestream",
}

// TestImage builds the image from the Dockerfile with podman, saves it and
// reads it back the way a registry would hold it: its configuration, its
// file tree, its two binaries run from the extracted layers as its non-root
// user, and then the image itself, started by podman.
//
// The build stage comes from the host (builderImage) because no registry is
// reachable here; BUILDER is the Dockerfile's switch for exactly that, and
// everything from the build stage on is the Dockerfile's own work.
func TestImage(t *testing.T) {
	podman := need(t, "podman", "apt-get install -y podman")
	root := repoRoot(t)
	builder := builderImage(t, podman)

	// The host's module and build caches are mounted where the golang
	// image keeps them, as a BuildKit cache mount would be: the RUN steps
	// still compile and link, but a warm cache spares minutes.
	//
	// --layers=false keeps no intermediate images, and the image this tag
	// named before is removed once the new one has it, so repeated runs
	// leave one image behind, not one per run.
	previous, err := runErr(time.Minute, nil, podman, "image", "inspect", "--format", "{{.Id}}", imageTag)
	if err != nil {
		previous = "" // no image under the tag yet
	}
	start := time.Now()
	run(t, 20*time.Minute, nil, podman, "build", "--isolation=chroot", "--layers=false",
		"--build-arg", "BUILDER="+builder,
		"--build-arg", "DELTA_BUILD="+buildLabel,
		"--build-arg", "DELTA_VERSION="+stampVersion,
		"-v", goEnv(t, "GOMODCACHE")+":/go/pkg/mod",
		"-v", goEnv(t, "GOCACHE")+":/root/.cache/go-build",
		"-t", imageTag, "-f", filepath.Join(root, "Dockerfile"), root)
	t.Logf("podman build: %s", time.Since(start).Round(time.Second))
	if previous = strings.TrimSpace(previous); previous != "" {
		current := strings.TrimSpace(run(t, time.Minute, nil, podman, "image", "inspect", "--format", "{{.Id}}", imageTag))
		if current != previous {
			_, _ = runErr(time.Minute, nil, podman, "rmi", previous)
		}
	}

	archive := filepath.Join(t.TempDir(), "image.tar")
	run(t, 5*time.Minute, nil, podman, "save", "--format", "docker-archive", "-o", archive, imageTag)
	img := unpackImage(t, archive, t.TempDir())

	t.Run("config", func(t *testing.T) { checkConfig(t, img.config) })
	t.Run("files", func(t *testing.T) { checkFiles(t, root, img) })
	t.Run("litestream version", func(t *testing.T) {
		out := run(t, time.Minute, nil, img.file("/usr/local/bin/litestream"), "version")
		if !strings.Contains(out, litestreamVersion) {
			t.Errorf("litestream version = %q, want %s", strings.TrimSpace(out), litestreamVersion)
		}
	})
	t.Run("extracted binaries as the image user", func(t *testing.T) { checkExtractedDaemon(t, img) })
	t.Run("podman run", func(t *testing.T) { checkImageRuns(t, podman) })
}

// imageConfig is the part of an OCI/Docker image configuration the tests
// read.
type imageConfig struct {
	User         string              `json:"User"`
	Env          []string            `json:"Env"`
	Entrypoint   []string            `json:"Entrypoint"`
	Cmd          []string            `json:"Cmd"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	Volumes      map[string]struct{} `json:"Volumes"`
	WorkingDir   string              `json:"WorkingDir"`
}

// env is the configuration's environment as a map.
func (c imageConfig) env() map[string]string {
	m := map[string]string{}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// image is a saved image unpacked: its configuration, the header of every
// path its layers leave (after whiteouts), and the regular files written
// under rootfs.
type image struct {
	config  imageConfig
	entries map[string]*tar.Header // "/usr/local/bin/delta" → header
	rootfs  string
}

func (img image) file(p string) string { return filepath.Join(img.rootfs, filepath.FromSlash(p)) }

// unpackImage reads a docker-archive: manifest.json names the
// configuration and the layers, which are applied in order into dir.
func unpackImage(t *testing.T, archive, dir string) image {
	t.Helper()
	members := map[string][]byte{}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read %s: %v", archive, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		members[path.Clean(h.Name)] = b
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(members["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v (%d images)", err, len(manifest))
	}
	var cfg struct {
		Config imageConfig `json:"config"`
	}
	if err := json.Unmarshal(members[path.Clean(manifest[0].Config)], &cfg); err != nil {
		t.Fatalf("image configuration %s: %v", manifest[0].Config, err)
	}
	img := image{config: cfg.Config, entries: map[string]*tar.Header{}, rootfs: filepath.Join(dir, "rootfs")}
	for _, name := range manifest[0].Layers {
		layer, ok := members[path.Clean(name)]
		if !ok {
			t.Fatalf("layer %s is not in the archive", name)
		}
		if err := img.apply(layer); err != nil {
			t.Fatalf("layer %s: %v", name, err)
		}
	}
	return img
}

// apply unpacks one layer over the tree: whiteouts delete what lower
// layers left, regular files are written (mode kept, ownership recorded in
// the header only).
func (img *image) apply(layer []byte) error {
	var r io.Reader = bytes.NewReader(layer)
	if bytes.HasPrefix(layer, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := path.Clean("/" + h.Name)
		dir, base := path.Split(p)
		switch {
		case base == ".wh..wh..opq":
			img.remove(path.Clean(dir), false)
			continue
		case strings.HasPrefix(base, ".wh."):
			img.remove(path.Join(dir, strings.TrimPrefix(base, ".wh.")), true)
			continue
		}
		img.entries[p] = h
		target := img.file(p)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(target, b, fs.FileMode(h.Mode)&fs.ModePerm); err != nil {
				return err
			}
		}
	}
}

// remove drops p's subtree (and p itself when self) from the tree.
func (img *image) remove(p string, self bool) {
	for name := range img.entries {
		if (self && name == p) || strings.HasPrefix(name, strings.TrimSuffix(p, "/")+"/") {
			delete(img.entries, name)
		}
	}
	if self {
		_ = os.RemoveAll(img.file(p))
	}
}

// checkConfig: the image starts the entrypoint as the non-root user, with
// the container defaults (all interfaces, state under /data) and the build
// label in its environment.
func checkConfig(t *testing.T, c imageConfig) {
	if c.User != fmt.Sprintf("%d:%d", imageUID, imageGID) {
		t.Errorf("User = %q, want %d:%d (numeric, so no runtime needs /etc/passwd to resolve it)", c.User, imageUID, imageGID)
	}
	if uid, _, _ := strings.Cut(c.User, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("User = %q: the image runs as root", c.User)
	}
	if want := []string{"/usr/local/bin/delta", "entrypoint"}; !slices.Equal(c.Entrypoint, want) {
		t.Errorf("Entrypoint = %q, want %q", c.Entrypoint, want)
	}
	if len(c.Cmd) != 0 {
		t.Errorf("Cmd = %q, want none (the entrypoint takes no arguments)", c.Cmd)
	}
	env := c.env()
	for k, want := range map[string]string{
		"PORT": "8080", "DELTA_BIND": "0.0.0.0", "DELTA_DB": "/data/delta.db",
		"DELTA_WORKSPACE": "/data/workspace", "DELTA_BUILD": buildLabel,
	} {
		if got, ok := env[k]; !ok || got != want {
			t.Errorf("Env %s = %q (set %v), want %q", k, got, ok, want)
		}
	}
	if !slices.Contains(filepath.SplitList(env["PATH"]), "/usr/local/bin") {
		t.Errorf("Env PATH = %q: the entrypoint finds litestream on PATH, in /usr/local/bin", env["PATH"])
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("ExposedPorts = %v, want 8080/tcp only", c.ExposedPorts)
	}
	if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("Volumes = %v, want /data only", c.Volumes)
	}
}

// checkFiles: exactly the expected files, each where the Dockerfile puts
// it, both binaries static, the certificates parseable, the user in
// /etc/passwd and /etc/group, /data owned by it and /tmp usable by it.
func checkFiles(t *testing.T, root string, img image) {
	var files, links []string
	for p, h := range img.entries {
		switch h.Typeflag {
		case tar.TypeReg:
			files = append(files, p)
		case tar.TypeSymlink, tar.TypeLink:
			links = append(links, p+" -> "+h.Linkname)
		}
	}
	slices.Sort(files)
	if !slices.Equal(files, imageFiles) {
		t.Errorf("regular files in the image:\n  %s\nwant exactly:\n  %s", strings.Join(files, "\n  "), strings.Join(imageFiles, "\n  "))
	}
	if len(links) > 0 {
		t.Errorf("links in the image (none expected): %q", links)
	}
	for _, p := range []string{"/usr/local/bin/delta", "/usr/local/bin/litestream"} {
		h := img.entries[p]
		if h == nil {
			continue // reported above
		}
		if h.Mode&0o111 == 0 {
			t.Errorf("%s: mode %o is not executable", p, h.Mode)
		}
		checkStaticELF(t, img.file(p))
	}

	if bundle, err := os.ReadFile(img.file("/etc/ssl/certs/ca-certificates.crt")); err != nil {
		t.Error(err)
	} else if n := countCerts(bundle); n < 10 {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt: %d certificates parse, want a CA bundle", n)
	}

	passwd := readColonFile(t, img.file("/etc/passwd"))
	if u := passwd[fmt.Sprint(imageUID)]; u == nil || u[0] == "root" || u[3] != fmt.Sprint(imageGID) || u[5] != "/data" {
		t.Errorf("/etc/passwd: uid %d = %q, want a non-root user with gid %d and home /data", imageUID, u, imageGID)
	}
	if g := readColonFile(t, img.file("/etc/group")); g[fmt.Sprint(imageGID)] == nil {
		t.Errorf("/etc/group: no group %d", imageGID)
	}
	if h := img.entries["/data"]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != imageUID || h.Gid != imageGID {
		t.Errorf("/data = %+v, want a directory owned by %d:%d (a new volume copies its ownership)", h, imageUID, imageGID)
	}
	if h := img.entries["/tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp = %+v, want a directory with mode 1777", h)
	}

	want, err := os.ReadFile(filepath.Join(root, "etc", "litestream.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(img.file("/etc/delta/litestream.yml")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("/etc/delta/litestream.yml differs from etc/litestream.yml (err %v)", err)
	}
	// The entrypoint turns backup on whenever /etc/litestream.yml exists;
	// the template there would make every plain run try S3.
	if img.entries["/etc/litestream.yml"] != nil {
		t.Error("/etc/litestream.yml is in the image: backup would be on for every container")
	}
}

// checkStaticELF: an executable for this machine with no program
// interpreter, so it needs no libc from the (empty) base.
func checkStaticELF(t *testing.T, p string) {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Errorf("%s: %v", p, err)
		return
	}
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]
	if f.Machine != machine {
		t.Errorf("%s: ELF machine %v, want %v", p, f.Machine, machine)
	}
	if err := staticELF(p); err != nil {
		t.Error(err)
	}
}

func countCerts(rest []byte) int {
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return n
		}
		if _, err := x509.ParseCertificate(block.Bytes); err == nil {
			n++
		}
	}
}

// readColonFile reads /etc/passwd or /etc/group, keyed by the third field
// (uid or gid).
func readColonFile(t *testing.T, p string) map[string][]string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer f.Close()
	m := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 3 {
			m[fields[2]] = fields
		}
	}
	return m
}

// checkExtractedDaemon runs the extracted delta entrypoint, with the
// extracted litestream on PATH, as the image's user, from the image's
// environment (only the paths, port and bind changed for the host): it
// seeds the workspace, starts under litestream replicate against a file
// replica, and serves /healthz with the stamped version and the build
// label.
func checkExtractedDaemon(t *testing.T, img image) {
	dir := userDir(t)
	bin := filepath.Join(dir, "bin")
	for _, p := range []string{"/usr/local/bin/delta", "/usr/local/bin/litestream"} {
		b, err := os.ReadFile(img.file(p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, path.Base(p)), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "data")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	chownUser(t, state)
	port := daemontest.FreePort(t)
	env := img.config.env()
	for k, v := range map[string]string{
		"PATH":                   bin,
		"HOME":                   state,
		"PORT":                   fmt.Sprint(port),
		"DELTA_BIND":             "127.0.0.1",
		"DELTA_DB":               filepath.Join(state, "delta.db"),
		"DELTA_WORKSPACE":        filepath.Join(state, "workspace"),
		"DELTA_CONTROL_TOKEN":    "dist-test-control-token",
		"DELTA_SELF_MD_B64":      base64.StdEncoding.EncodeToString([]byte(seedSelf)),
		"LITESTREAM_REPLICA_URL": "file://" + filepath.Join(state, "replica"),
		"DELTA_BOOTSTRAP":        "1",
		"TMPDIR":                 state,
	} {
		env[k] = v
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}

	var log daemontest.Output
	cmd := exec.Command(filepath.Join(bin, "delta"), "entrypoint") //nolint:noctx // stopped with SIGTERM below, then killed
	cmd.Env, cmd.Stdout, cmd.Stderr = environ, &log, &log
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: imageUID, Gid: imageGID}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	gone := func() error {
		select {
		case err := <-exited:
			stopped = true
			return fmt.Errorf("the entrypoint exited: %v", err)
		default:
			return nil
		}
	}
	health := waitHealthy(t, base, gone, func() string { return log.String() })
	if health["version"] != stampVersion || health["build"] != buildLabel {
		t.Errorf("/healthz = %v, want version %s and build %s", health, stampVersion, buildLabel)
	}
	if code := get(t, base+"/v1/busy"); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/busy without the control token: %d, want 401", code)
	}
	checkState(t, state)

	// SIGTERM reaches litestream, which passes it on to the daemon and
	// syncs once more; both exit.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		stopped = true
	case <-time.After(30 * time.Second):
		t.Errorf("the entrypoint did not exit within 30s of SIGTERM; log:\n%s", log.String())
	}
}

// checkState: the database and the seeded self-file belong to the image's
// user (so the daemon really ran as it), and Litestream wrote the replica.
func checkState(t *testing.T, state string) {
	t.Helper()
	for _, p := range []string{filepath.Join(state, "delta.db"), filepath.Join(state, "workspace", "DELTA.md")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && (st.Uid != imageUID || st.Gid != imageGID) {
			t.Errorf("%s is owned by %d:%d, want the image user %d:%d", p, st.Uid, st.Gid, imageUID, imageGID)
		}
	}
	if b, err := os.ReadFile(filepath.Join(state, "workspace", "DELTA.md")); err != nil || string(b) != seedSelf {
		t.Errorf("workspace/DELTA.md = %q (%v), want the DELTA_SELF_MD_B64 seed", b, err)
	}
	// Litestream picks a new database up on its first monitor tick.
	replica := filepath.Join(state, "replica")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if entries, err := os.ReadDir(replica); err == nil && len(entries) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("litestream wrote nothing to the replica %s within 30s", replica)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkImageRuns starts the image itself with podman, the way the README
// says, on a fresh named volume: podman copies /data's ownership into it,
// the entrypoint seeds the workspace and starts the daemon under
// litestream replicate, and /healthz answers on the published port 8080.
//
// Two adjustments for this sandbox, harmless elsewhere: runc as the OCI
// runtime, because crun refuses the host's hybrid cgroup layout; and
// explicit lower rlimits, because the runtime cannot raise RLIMIT_NOFILE
// and RLIMIT_NPROC to podman's defaults without CAP_SYS_RESOURCE.
func checkImageRuns(t *testing.T, podman string) {
	runc := need(t, "runc", "apt-get install -y runc")
	suffix := randomHex(t)
	volume, name := "delta-dist-test-"+suffix, "delta-dist-test-"+suffix
	run(t, time.Minute, nil, podman, "volume", "create", volume)
	t.Cleanup(func() {
		_, _ = runErr(time.Minute, nil, podman, "rm", "-f", "-t", "0", name)
		_, _ = runErr(time.Minute, nil, podman, "volume", "rm", "-f", volume)
	})
	port := daemontest.FreePort(t)
	run(t, 2*time.Minute, nil, podman, "--runtime", runc, "run", "-d", "--name", name,
		"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096",
		"-p", fmt.Sprintf("127.0.0.1:%d:8080", port),
		"-e", "DELTA_CONTROL_TOKEN=dist-test-control-token",
		"-e", "DELTA_SELF_MD_B64="+base64.StdEncoding.EncodeToString([]byte(seedSelf)),
		"-e", "LITESTREAM_REPLICA_URL=file:///data/replica",
		"-e", "DELTA_BOOTSTRAP=1",
		"-v", volume+":/data", imageTag)
	logs := func() string { out, _ := runErr(time.Minute, nil, podman, "logs", name); return out }
	gone := func() error {
		state, err := runErr(time.Minute, nil, podman, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name)
		if err != nil || !strings.HasPrefix(state, "running") {
			return fmt.Errorf("the container is %s (%v)", strings.TrimSpace(state), err)
		}
		return nil
	}
	health := waitHealthy(t, fmt.Sprintf("http://127.0.0.1:%d", port), gone, logs)
	if health["version"] != stampVersion || health["build"] != buildLabel {
		t.Errorf("/healthz = %v, want version %s and build %s", health, stampVersion, buildLabel)
	}
	if code := get(t, fmt.Sprintf("http://127.0.0.1:%d/v1/busy", port)); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/busy without the control token: %d, want 401", code)
	}
	mount := strings.TrimSpace(run(t, time.Minute, nil, podman, "volume", "inspect", "--format", "{{.Mountpoint}}", volume))
	checkState(t, mount)
	run(t, time.Minute, nil, podman, "stop", "-t", "30", name)
	if code := strings.TrimSpace(run(t, time.Minute, nil, podman, "inspect", "--format", "{{.State.ExitCode}}", name)); code != "0" {
		t.Errorf("after podman stop the container exited %s, want 0; logs:\n%s", code, logs())
	}

	// The image listens on all interfaces, so without a control token it
	// refuses to start rather than serve an open API.
	t.Cleanup(func() { _, _ = runErr(time.Minute, nil, podman, "rm", "-f", "-t", "0", name+"-open") })
	out, err := runErr(2*time.Minute, nil, podman, "--runtime", runc, "run", "--rm", "--name", name+"-open",
		"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", imageTag)
	if err == nil || !strings.Contains(out, "DELTA_CONTROL_TOKEN") {
		t.Errorf("podman run without DELTA_CONTROL_TOKEN: err %v, want a refusal naming DELTA_CONTROL_TOKEN; output:\n%s", err, out)
	}
}

// waitHealthy polls /healthz until it answers 200 and returns its body;
// it fails when gone reports that the daemon stopped first, or nothing
// answers for a minute (a bound on a hang, not a speed assertion).
func waitHealthy(t *testing.T, base string, gone func() error, logs func() string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		if err := gone(); err != nil {
			t.Fatalf("stopped before serving /healthz: %v; log:\n%s", err, logs())
		}
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			var body map[string]any
			derr := json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && derr == nil {
				return body
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz did not answer 200 within a minute (last error %v); log:\n%s", err, logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// userDir is a fresh directory the image's user owns, in a parent it can
// traverse (t.TempDir's parents are root's, mode 0700).
func userDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "delta-dist-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	chownUser(t, dir)
	return dir
}

// chownUser gives p to the image's user when the test runs as root (as
// another user, the daemon runs as that user: non-root either way).
func chownUser(t *testing.T, p string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	if err := os.Chown(p, imageUID, imageGID); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
