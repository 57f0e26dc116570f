package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadScheduler(t *testing.T) {
	s, err := LoadScheduler(mapLookup(map[string]string{"DELTA_CONTROL_TOKEN": "tok"}))
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(s.DB) || filepath.Base(s.DB) != DefaultSchedulerDB || s.Listen != DefaultSchedulerListen ||
		s.DaemonURL != DefaultDaemonURL || s.Token != "tok" || s.DaemonToken != "tok" {
		t.Fatalf("defaults: %+v", s)
	}
	s, err = LoadScheduler(mapLookup(map[string]string{"DELTA_CONTROL_TOKEN": "tok", "DELTA_SCHEDULER_DAEMON_TOKEN": "other",
		"DELTA_URL": "https://agent.example", "DELTA_SCHEDULER_LISTEN": "0.0.0.0:9000"}))
	if err != nil || s.DaemonToken != "other" || s.DaemonURL != "https://agent.example" || s.Listen != "0.0.0.0:9000" {
		t.Fatalf("overrides: %+v, %v", s, err)
	}
	if _, err := LoadScheduler(mapLookup(map[string]string{"DELTA_URL": "agent.example"})); err == nil || !strings.Contains(err.Error(), "DELTA_URL") {
		t.Fatalf("a relative daemon URL: %v", err)
	}
	for _, bad := range []string{"8091", "127.0.0.1:99999", "127.0.0.1:http", "127.0.0.1:-1"} {
		_, err := LoadScheduler(mapLookup(map[string]string{"DELTA_SCHEDULER_LISTEN": bad}))
		if err == nil || !strings.Contains(err.Error(), "DELTA_SCHEDULER_LISTEN") || !strings.Contains(err.Error(), "127.0.0.1:8091") {
			t.Errorf("DELTA_SCHEDULER_LISTEN=%s: %v, want a refusal naming the variable and an example", bad, err)
		}
	}
}

func TestSchedulingNeedsURLAndToken(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		on      bool
		warning string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"DELTA_CONTROL_TOKEN": "t"}, false, ""},
		{map[string]string{"DELTA_CONTROL_URL": "http://127.0.0.1:8091"}, false, "scheduling tools are off"},
		{map[string]string{"DELTA_CONTROL_URL": "http://127.0.0.1:8091", "DELTA_CONTROL_TOKEN": "t"}, true, ""},
		{map[string]string{"DELTA_CONTROL_URL": "http://control.example", "DELTA_CONTROL_TOKEN": "t"}, true, "clear text"},
		{map[string]string{"DELTA_CONTROL_URL": "https://control.example", "DELTA_CONTROL_TOKEN": "t"}, true, ""},
	} {
		c, err := Load(mapLookup(tc.env))
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if c.Scheduling() != tc.on {
			t.Errorf("%v: scheduling %v, want %v", tc.env, c.Scheduling(), tc.on)
		}
		joined := strings.Join(c.Warnings, "\n")
		if tc.warning != "" && !strings.Contains(joined, tc.warning) {
			t.Errorf("%v: warnings %q lack %q", tc.env, joined, tc.warning)
		}
		if tc.warning == "" && strings.Contains(joined, "DELTA_CONTROL_URL") {
			t.Errorf("%v: unexpected warning %q", tc.env, joined)
		}
	}
	if _, err := Load(mapLookup(map[string]string{"DELTA_CONTROL_URL": "control.example"})); err == nil {
		t.Error("a relative DELTA_CONTROL_URL was accepted")
	}
}
