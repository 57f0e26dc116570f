package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Scheduler defaults.
const (
	DefaultSchedulerDB     = "delta-scheduler.db"
	DefaultSchedulerListen = "127.0.0.1:8091"
	DefaultDaemonURL       = "http://127.0.0.1:8080"
)

// Scheduling reports whether the daemon offers the schedule tools: both
// DELTA_CONTROL_URL and DELTA_CONTROL_TOKEN are set.
func (c Config) Scheduling() bool { return c.ControlURL != "" && c.ControlToken != "" }

// controlWarnings explains a half-configured control plane, and a control
// token about to travel in clear text off the machine.
func controlWarnings(controlURL, token string) []string {
	var w []string
	switch {
	case controlURL != "" && token == "":
		w = append(w, "DELTA_CONTROL_URL is set but DELTA_CONTROL_TOKEN is not: the scheduling tools are off")
	case controlURL == "":
		return nil
	}
	if u, err := url.Parse(controlURL); err == nil && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		w = append(w, "DELTA_CONTROL_URL is plain http to a non-loopback host: the control token is sent in clear text; use https")
	}
	return w
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Scheduler is what `delta scheduler` reads; its flags override the
// database, listen address and daemon URL. Tokens come only from the
// environment, never from flags, which other users can read in ps.
type Scheduler struct {
	DB          string // DELTA_SCHEDULER_DB, made absolute
	Listen      string // DELTA_SCHEDULER_LISTEN
	Token       string // DELTA_CONTROL_TOKEN: the bearer the daemon's schedule tools present
	DaemonURL   string // DELTA_URL: the daemon firings are posted to
	DaemonToken string // DELTA_SCHEDULER_DAEMON_TOKEN, default Token: the daemon's control token
}

// LoadScheduler reads the scheduler's variables through lookup.
func LoadScheduler(lookup func(string) (string, bool)) (Scheduler, error) {
	l := &loader{lookup: lookup}
	s := Scheduler{
		DB:        absPath(l.str("DELTA_SCHEDULER_DB", DefaultSchedulerDB)),
		Listen:    l.str("DELTA_SCHEDULER_LISTEN", DefaultSchedulerListen),
		Token:     l.str("DELTA_CONTROL_TOKEN", ""),
		DaemonURL: l.baseURL("DELTA_URL", DefaultDaemonURL),
	}
	if err := CheckListenAddr(s.Listen); err != nil {
		l.fail("DELTA_SCHEDULER_LISTEN", s.Listen, "%v", err)
	}
	s.DaemonToken = l.str("DELTA_SCHEDULER_DAEMON_TOKEN", s.Token)
	if len(l.errs) > 0 {
		return Scheduler{}, errors.Join(l.errs...)
	}
	return s, nil
}

// CheckListenAddr accepts a host:port listen address whose port is 0–65535
// (0: any free port); the host may be empty (every interface). The
// scheduler checks its --listen flag with it too, so a bad address is
// refused before the database is opened, naming what to send.
func CheckListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, e.g. %s (%v)", DefaultSchedulerListen, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("want a port from 0 to 65535 after the colon, e.g. %s", DefaultSchedulerListen)
	}
	return nil
}

// CheckBaseURL accepts what a base-URL variable accepts (DELTA_URL,
// MODEL_BASE_URL, …): an absolute http or https URL with a host. Flags
// that stand in for such a variable (delta scheduler --daemon-url) are
// checked with it, so the flag is held to the variable's rule.
func CheckBaseURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an absolute http or https URL, e.g. " + DefaultDaemonURL)
	}
	return nil
}
