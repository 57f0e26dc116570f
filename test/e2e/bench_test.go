package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deltaharness/delta/test/daemontest"
)

// BenchmarkStartToHealthy measures process start to the first 200 from
// /healthz on an existing database (migrations already applied).
func BenchmarkStartToHealthy(b *testing.B) {
	dir := b.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "DELTA_DB=" + filepath.Join(dir, "d.db"),
		"DELTA_WORKSPACE=" + filepath.Join(dir, "ws"), "MODEL_API_KEY=unused"}
	for i := 0; i < b.N; i++ {
		port := daemontest.FreePort(b)
		cmd := exec.Command(deltaBin, "serve")
		cmd.Env = append(env, fmt.Sprintf("PORT=%d", port))
		url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for {
			resp, err := http.Get(url)
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Since(start) > 20*time.Second {
				b.Fatal("never healthy")
			}
			time.Sleep(time.Millisecond)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms/start")
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
}

// BenchmarkIdleSessionRSS runs b.N one-turn sessions through the daemon and
// reports how much resident memory each finished (idle) session costs.
func BenchmarkIdleSessionRSS(b *testing.B) {
	fake := startFake(b)
	d := newDaemon(b, fake)
	warm := func(n int) {
		for i := 0; i < n; i++ {
			req, _ := http.NewRequest("POST", d.url+"/v1/responses", strings.NewReader(`{"input":"Write a brief about item `+strconv.Itoa(i)+`."}`))
			req.Header.Set("Authorization", "Bearer "+d.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	warm(20)
	before := rssKB(b, d.proc.Cmd.Process.Pid)
	b.ResetTimer()
	warm(b.N)
	b.StopTimer()
	after := rssKB(b, d.proc.Cmd.Process.Pid)
	b.ReportMetric(float64(after-before)/float64(b.N), "KB-RSS/session")
	b.ReportMetric(float64(after)/1024, "MB-RSS-total")
}

func rssKB(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
