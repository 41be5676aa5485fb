// Command peer is the Go peer of acemq-interop: the acemq binding behind the
// JSON-lines peer protocol (docs/peer-protocol.md). Commands come one per
// line on stdin and each runs on its own goroutine; answers and events go to
// stdout one line at a time; the log goes to stderr. It exits when stdin
// closes or on "shutdown".
package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log"
	"os"
	"sync"
)

const (
	peerName   = "go"
	defaultURL = "amqp://guest:guest@127.0.0.1:5672/"
)

// output writes protocol lines. One lock around each whole line keeps lines
// from interleaving; os.Stdout is unbuffered, so each write is a flush.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *output) write(msg interface{}) {
	line, err := json.Marshal(msg)
	if err != nil {
		log.Printf("cannot encode %#v: %v", msg, err)
		return
	}
	line = append(line, '\n')
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.w.Write(line); err != nil {
		log.Printf("cannot write to stdout: %v", err)
	}
}

func main() {
	log.SetOutput(os.Stderr)
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	url := os.Getenv("ACEMQ_AMQP_URL")
	if url == "" {
		url = defaultURL
	}
	p := newPeer(&output{w: os.Stdout}, url)

	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			p.dispatch(line)
		}
		if err != nil {
			if err != io.EOF {
				log.Printf("reading stdin: %v", err)
			}
			break
		}
	}
	p.closeAll()
	os.Exit(0)
}
