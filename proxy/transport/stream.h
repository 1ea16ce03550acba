// A non-blocking socket with an input and an output buffer, read and
// written by the proxy itself rather than by a libevent bufferevent.
//
// Why not bufferevents: on a small request they cost most of a proxy's
// system calls. libevent 2.1 asks the kernel how much is readable (ioctl
// FIONREAD) before every read, reads at most 4 KiB and writes at most
// 16 KiB at a time, and turns write interest on and off around every write
// (two epoll_ctl calls). A Stream instead
//  - reads once per readiness into a large reserved space, and reads again
//    only when that space came back full;
//  - never writes from the request path: appending output marks the stream
//    dirty, and its StreamLoop writes every dirty stream once per event
//    loop iteration, so all the requests (or replies) that one iteration
//    produced for a socket leave in one writev;
//  - asks for write readiness only when the kernel refused bytes;
//  - hands all of an iteration's writes to the kernel in one system call
//    when it can (io_uring, see io_batch.h), and, where the loop's owner
//    asks for it, all of an iteration's reads too.
#pragma once

#include <event2/buffer.h>
#include <event2/event.h>
// struct event is embedded in each Stream rather than allocated by
// event_new: one allocation less per connection, and none that outlives it
// in malloc's heap. This ties the build to the installed libevent's layout,
// which is the one it links against.
#include <event2/event_struct.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proxy/transport/io_batch.h"
#include "proxy/transport/socket_address.h"
#include "proxy/transport/tls_link.h"

namespace memshard::proxy {

// Reads per readiness at most: a peer that keeps the socket full cannot
// keep the loop from its other sockets.
inline constexpr int kMaxReadsPerEvent = 4;

class Stream;

// The streams of one event loop (one worker) that have output to write.
class StreamLoop {
 public:
  // How flush() writes.
  enum class Writes : uint8_t {
    batched,     // all the streams in one submission (io_uring) when the
                 // kernel allows it, else one_by_one
    one_by_one,  // one writev per stream
  };

  explicit StreamLoop(event_base* base, Writes writes = Writes::batched);
  ~StreamLoop();
  StreamLoop(const StreamLoop&) = delete;
  StreamLoop& operator=(const StreamLoop&) = delete;
  event_base* base() const { return base_; }
  // Writes the output of every dirty stream. Called by the loop's owner
  // after each event loop iteration.
  void flush();
  // Whether flush() batches its writes now.
  bool batching() const { return batch_ != nullptr && batch_->available(); }
  // Reads batched too: a stream that becomes readable during an iteration
  // waits, and read_ready() reads every such stream in one submission,
  // before any of them reports its input. Only for an owner that calls
  // read_ready() after every iteration, before flush(); only while
  // batching() (the ring is the writes').
  void batch_reads(bool on) { batch_reads_ = on; }
  bool batching_reads() const { return batch_reads_ && batching(); }
  // Reads the streams that became readable in this iteration, then
  // reports what each got (input, eof, error), in the order they became
  // readable.
  void read_ready();
  // Reads made in read_ready()'s submissions so far.
  uint64_t batched_reads() const { return batched_reads_; }
  // Empty buffers kept for the loop's streams, at most kMaxSpareBuffers.
  size_t spare_buffers() const { return spare_.size(); }
  // Why batching was asked for and is not available (an errno), else 0.
  int batching_error() const { return batch_ != nullptr ? batch_->setup_error() : 0; }
  // Submissions made so far, and the sends they carried.
  uint64_t batches() const { return batches_; }
  uint64_t batched_sends() const { return batched_sends_; }

 private:
  friend class Stream;
  void flush_batched();
  // Queues the sends of dirty_[begin, end) on batch_, kMaxSends at a time,
  // and records in sent_ what each made (IoBatch::submit).
  void send_batched(size_t begin, size_t end);
  // read_ready()'s first half: every stream's bytes into its input, none
  // reported yet, so no owner acts (closes, moves a connection to another
  // thread) on a stream whose bytes are read but not yet in its input.
  void receive_batched();
  // A submission was refused: the ring is gone, and every later read and
  // write is one system call per socket.
  static void log_ring_lost();

  event_base* base_;
  std::vector<Stream*> dirty_;  // null: the stream was destroyed meanwhile
  std::unique_ptr<IoBatch> batch_;
  // Per stream of a batch: iovecs, kIovPerSend each, and what the send made.
  std::vector<iovec> iov_;
  std::vector<int> sent_;
  std::vector<size_t> batch_members_;  // of one submission, as offsets in the round
  uint64_t batches_ = 0;
  uint64_t batched_sends_ = 0;
  bool batch_reads_ = false;
  // Streams readable this iteration (null: destroyed or closed meanwhile),
  // and what reading each found.
  struct ReadOutcome {
    size_t got = 0;
    bool eof = false;
    bool error = false;
  };
  std::vector<Stream*> readable_;
  std::vector<ReadOutcome> read_outcomes_;
  // Where one submission's receives land: a compact stream with an empty
  // input gets a slot of the arena (copied out afterwards, as its plain
  // reads are from scratch_), any other reads into space reserved in its
  // input.
  struct Landing {
    evbuffer_iovec vec[2];
    int nvec = 0;
    char* slot = nullptr;  // the arena's, else vec is reserved space
    size_t want = 0;
  };
  std::vector<Landing> landings_;
  std::unique_ptr<char[]> arena_;  // kReadsPerSubmission slots of kMaxReadChunk, made on first use
  uint64_t batched_reads_ = 0;
  static constexpr int kIovPerSend = 64;
  // Shared landing space for reads into an empty input (see Stream::Reads).
  std::vector<char> scratch_ = std::vector<char>(kMaxReadChunk);
  // A client stream gives its buffers up whenever they are empty, which is
  // after every request, and needs them again for the next: making and
  // freeing two evbuffers per request was a tenth of a worker's user-space
  // time. Empty buffers wait here instead, a few, so idle clients still
  // hold none.
  evbuffer* take_buffer();
  void give_back(evbuffer* buffer);  // frees it when the spares are full
  std::vector<evbuffer*> spare_;

 public:
  static constexpr size_t kMaxReadChunk = 64 * 1024;
  // Receives per read_ready() submission: bounds the arena (4 MiB of
  // address space; a slot's pages are touched only as far as reads reach).
  static constexpr size_t kReadsPerSubmission = 64;
  static constexpr size_t kMaxSpareBuffers = 64;
};

class Stream {
 public:
  // What happened, as passed to the owner's callback. The callback may
  // destroy the stream.
  enum class Happened : uint8_t {
    input,      // new bytes in input()
    eof,        // the peer closed (after any last input was delivered)
    error,      // the socket failed; the stream is unusable
    connected,  // connect() completed
    written,    // output was written (only when watch_writes is on)
    flushing,   // the loop is about to write this stream's output (only
                // when watch_flush is on): the last moment to append
  };
  using Callback = void (*)(void* owner, Happened what);

  // Where reads land.
  enum class Reads : uint8_t {
    // Straight into space reserved in the input buffer: no copy, but
    // every read allocates `read_chunk` while the input is empty. For the
    // few, busy server connections.
    reserved,
    // Into the loop's shared scratch space when the input is empty, then
    // copied into a buffer just big enough; straight in otherwise (a value
    // still arriving). For client connections: thousands of clients each
    // sending a small request at once must not each pin a read chunk.
    compact,
  };

  // Takes ownership of `fd` (-1 for a stream that will connect()).
  // `read_chunk` is at most StreamLoop::kMaxReadChunk.
  Stream(StreamLoop& loop, int fd, Callback callback, void* owner, size_t read_chunk, Reads reads);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Closes the socket now and drops buffered bytes; no more reports. The
  // object stays valid (an owner may close inside its callback).
  void close();
  // Makes the coming close a reset (SO_LINGER 0): what the kernel still
  // holds to send is dropped, not delivered later by an orphaned socket.
  // For a connection given up on with requests owed: a frozen server that
  // resumes would otherwise still receive and apply writes whose clients
  // were answered SERVER_ERROR and whose keys were recorded for repair.
  // (What the server's own kernel already received stays there: a reset
  // does not take it back.)
  void reset_on_close();

  // Starts a non-blocking connect to the first of `addresses` that takes
  // one, beginning at index `first` and going round them all once: an
  // address that refuses or cannot be reached makes the stream try the
  // next, output kept, before anything is reported. False when every one
  // failed at once (errno set: the last failure); otherwise `connected`
  // or `error` (every address failed) follows. Output appended meanwhile
  // is written once connected.
  bool connect(std::span<const SocketAddress> addresses, size_t first = 0);
  bool connect(const SocketAddress& address) { return connect({&address, 1}); }
  // The index in connect()'s `addresses` being tried, or once connected
  // the one that answered.
  size_t target() const { return target_; }
  // That address (a copy the stream keeps); null when connect() was not
  // called.
  const SocketAddress* peer() const {
    return target_ < targets_.size() ? &targets_[target_] : nullptr;
  }
  int fd() const { return fd_; }

  // The buffers exist while they hold bytes (client streams free them
  // when empty); these make them on demand.
  evbuffer* input();
  evbuffer* output();
  size_t input_length() const;
  // Bytes owed to the peer: for TLS, plaintext and records not yet written.
  size_t output_length() const;
  // Call after appending to output(): it is written at the end of this
  // loop iteration.
  void mark_dirty();

  // Reading is on unless the owner turns it off (backpressure, closing)
  // or the input holds `input_limit` bytes (which bounds what a peer can
  // make us buffer); it resumes when the owner calls update() after
  // consuming input.
  void set_reading(bool on);
  void set_input_limit(size_t bytes);
  // Reports `written` after every write while on.
  void watch_writes(bool on) { watch_writes_ = on; }
  // Reports `flushing` before the loop writes a dirty stream, for an owner
  // that holds back the tail of its output while more may join it.
  void watch_flush(bool on) { watch_flush_ = on; }
  // Re-evaluates what to wait for after the owner consumed input.
  void update();

  // Nothing buffered, owed or pending: no input, no output (written or
  // waiting to be), and reading on and healthy.
  bool quiet() const { return settled() && reading_; }
  // The same, whether reading is on or off (a connection held still to be
  // handed to another thread).
  bool settled() const;
  // Speaks TLS through `ssl` (owned) from now on: as the accepting side at
  // once, or, on a stream that connect()s, as the connecting side once the
  // connection is made ("connected" is then reported after the handshake).
  // Until the handshake is done nothing is read or written; one that is not
  // done within `timeout_ms` fails the stream ("error").
  void start_tls(SSL* ssl, const TlsCounters& counters, int timeout_ms);
  bool tls() const { return tls_ != nullptr; }
  // TLS: a record ends at the current end of the output. memcached 1.6's
  // TLS serves a request only once its socket is readable again, however
  // much of the next one OpenSSL already holds for it: a request that ends
  // mid-record then waits for bytes that never come. Owners writing to
  // memcached end a record after every request; a plain stream ignores it.
  void end_record();
  // Why the TLS handshake failed, once it did; else empty.
  std::string tls_error() const { return tls_ != nullptr ? tls_->error : std::string(); }

  // Stops watching the socket and hands it to the caller, who owns it from
  // now on; buffers are dropped. The stream is left closed.
  int release_fd();

 private:
  friend class StreamLoop;
  static void on_event(evutil_socket_t fd, short what, void* self);
  void handle_read();
  // Reads until the socket is drained, the input limit is reached, or
  // `rounds` reads were made.
  void read_plain(size_t& got, bool& eof, bool& error, int rounds);
  // Reserves room for `want` bytes in the input and fills `iov` with it,
  // all of the reserved space but never past the input limit; `want`
  // becomes the room given. Returns the vectors used (<= 0: none could be
  // reserved).
  int reserve_input(size_t& want, evbuffer_iovec vec[2], iovec iov[2]);
  // Commits the first `got` bytes of reserved space as input.
  void commit_input(evbuffer_iovec vec[2], int nvec, size_t got);
  // The rest of a read: flags, interest, reports (which may destroy the
  // stream).
  void after_read(size_t got, bool eof, bool error);
  // Whether a read now could take bytes.
  bool wants_read() const {
    return fd_ >= 0 && !failed_ && reading_ && !eof_ && tls_ == nullptr &&
           input_length() < input_limit_;
  }
  void handle_write();
  // Connected (and past any TLS handshake), not failed, not closed: bytes
  // may be written.
  bool writable() const {
    return !connecting_ && !failed_ && fd_ >= 0 && (tls_ == nullptr || !tls_->handshaking);
  }
  // Output to hand to a write batch.
  bool sendable() const { return writable() && output_length() > 0; }
  // What goes on the wire: the output, or for TLS the records made of it.
  evbuffer* wire() const { return tls_ != nullptr ? tls_->cipher : output_; }
  size_t wire_length() const { return wire() == nullptr ? 0 : evbuffer_get_length(wire()); }
  // TLS (stream_tls.cc): the handshake's steps, reads through OpenSSL,
  // the output made into records, failure.
  void on_tls_timeout();
  void tls_begin();
  void tls_handshake();
  bool tls_send_cipher();
  void tls_read(size_t& got, bool& eof, bool& error);
  bool tls_encrypt();
  void tls_fail(TlsFailure why);
  // Takes what a batched send made (bytes, or -errno), then writes
  // whatever is left as write_out does.
  bool finish_batched_send(int sent);
  // Writes the output until it is empty or the kernel refuses more.
  // `wrote`: bytes already written for this flush. Returns false when the
  // stream failed (and was reported).
  bool write_out(size_t wrote = 0);
  bool fail_write();
  // Opens a socket and starts connecting to targets_[target_], then to the
  // next ones while they fail at once. False when none is left.
  bool connect_next();
  // The current target failed: closes its socket, tries the others.
  bool connect_failed_try_next();
  // False when the owner destroyed the stream in its callback.
  bool report(Happened what);
  void set_interest();
  void release_empty_buffers();

  StreamLoop& loop_;
  int fd_;
  Callback callback_;
  void* owner_;
  evbuffer* input_ = nullptr;
  evbuffer* output_ = nullptr;
  event event_{};
  size_t read_chunk_;
  Reads reads_;
  size_t input_limit_ = SIZE_MAX;
  short interest_ = 0;  // EV_READ / EV_WRITE as registered
  bool rearm_ = false;  // register again even if the interest is the same
  bool reading_ = true;
  bool connecting_ = false;
  bool eof_ = false;      // the peer closed: nothing more to read
  bool blocked_ = false;  // the kernel refused output: waiting for EV_WRITE
  bool dirty_ = false;
  bool failed_ = false;
  bool watch_writes_ = false;
  bool watch_flush_ = false;
  bool read_queued_ = false;            // in loop_.readable_
  bool* alive_ = nullptr;               // cleared by the destructor, for callers of report()
  std::vector<SocketAddress> targets_;  // what connect() may still try
  size_t target_ = 0;
  size_t tries_left_ = 0;
  std::unique_ptr<TlsLink> tls_;  // null: plain
  int tls_timeout_ms_ = 0;
};

}  // namespace memshard::proxy
