// Package testserver runs the project's loopback test API server (Tests/server/api_server.py) for
// the Go tests: on 127.0.0.1, on a free port the server picks itself, in a process of its own that
// also ends when the test binary dies (its stdin then closes).
package testserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Server is a running test API server.
type Server struct {
	URL   string // "http://127.0.0.1:PORT"
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// Script is the path of api_server.py: $SHEAF_TEST_SERVER when set, else found from this file's
// place in the source tree (bindings/go/internal/testserver).
func Script() string {
	if path := os.Getenv("SHEAF_TEST_SERVER"); path != "" {
		return path
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "Tests", "server", "api_server.py")
}

// Start starts the server and waits (at most 30 s) for the port it prints.
func Start() (*Server, error) {
	python := os.Getenv("PYTHON3")
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, Script(), "--port", "0", "--host", "127.0.0.1", "--quiet", "--exit-on-stdin-eof")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the test server: %w", err)
	}
	ports := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ports <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ports:
		port, found := strings.CutPrefix(line, "PORT ")
		if !found {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("the test server printed %q, not PORT <n>", line)
		}
		return &Server{URL: "http://127.0.0.1:" + port, cmd: cmd, stdin: stdin}, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the test server printed no port within 30 s")
	}
}

// Close stops the server (its stdin closed, then SIGKILL after 10 s) and waits for it.
func (s *Server) Close() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// control asks the server for its counters without keeping a connection (and its goroutines).
var control = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// Stats is what the server's /_stats says.
type Stats struct {
	Requests    int `json:"requests"`
	MaxInFlight int `json:"max_in_flight"`
	InFlight    int `json:"in_flight"`
	Refused     int `json:"refused"` // 429s and 403s of limit=, ratelimit= and quota=
	NotModified int `json:"not_modified"` // 304s of etag=
	Log         []struct {
		Path          string  `json:"path"`
		Authorization *string `json:"authorization"`
	} `json:"log"`
}

// Stats reads the server's counters and request log (the /_stats request itself not counted).
func (s *Server) Stats() (Stats, error) {
	var stats Stats
	response, err := control.Get(s.URL + "/_stats")
	if err != nil {
		return stats, err
	}
	defer response.Body.Close()
	err = json.NewDecoder(response.Body).Decode(&stats)
	return stats, err
}

// Reset clears the counters and the request log, after waiting (at most 15 s) for the requests
// still in flight.
func (s *Server) Reset() error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		stats, err := s.Stats()
		if err != nil {
			return err
		}
		if stats.InFlight == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	response, err := control.Post(s.URL+"/_reset", "application/json", nil)
	if err != nil {
		return err
	}
	return response.Body.Close()
}

// GetJSON decodes the server's answer to a GET of path (a control endpoint such as
// /_orgs/<org>/issues, not counted in Stats) into v.
func (s *Server) GetJSON(path string, v any) error {
	response, err := control.Get(s.URL + path)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", path, response.StatusCode)
	}
	return json.NewDecoder(response.Body).Decode(v)
}

// Post sends an empty POST to path (a control endpoint such as /_orgs/<org>/options?latency_ms=30).
func (s *Server) Post(path string) error {
	response, err := control.Post(s.URL+path, "application/json", nil)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: HTTP %d", path, response.StatusCode)
	}
	return nil
}
