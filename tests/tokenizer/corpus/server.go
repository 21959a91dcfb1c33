package main

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"sync"
	"time"
)

type counter struct {
	mu    sync.Mutex
	hits  map[string]int
	start time.Time
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.hits[r.URL.Path]++
	n := c.hits[r.URL.Path]
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if err := json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "hits": n,
		"uptime": time.Since(c.start).Round(time.Millisecond).String()}); err != nil {
		log.Printf("encode: %v", err)
	}
}

func main() {
	c := &counter{hits: map[string]int{}, start: time.Now()}
	fmt.Println("listening on :8080")
	log.Fatal(http.ListenAndServe(":8080", c))
}
