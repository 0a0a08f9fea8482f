// Go net/http: the standard library server, the routes every peer serves.
package main

import (
	"encoding/json"
	"log"
	"net/http"
	"os"
)

type message struct {
	Message string `json:"message"`
}

var hello = []byte("Hello, World!")

func plaintext(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(hello)
}

func jsonHandler(w http.ResponseWriter, r *http.Request) {
	body, err := json.Marshal(message{Message: "Hello, World!"})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", plaintext)
	mux.HandleFunc("/json", jsonHandler)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), mux))
}
