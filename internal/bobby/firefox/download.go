package firefox

// UserAgent is the user agent Firefox reported when its BiDi session
// began: what a download on the session's behalf sends ("" before Open).
func (s *Session) UserAgent() string {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	if s.rt.b == nil {
		return ""
	}
	return s.rt.b.Capabilities.UserAgent
}
