#include "proxy/routes/hot_key_routes.h"

#include <array>

#include "proxy/routes/held_request.h"
#include "proxy/routes/pool_route.h"

namespace memshard::proxy {

namespace {

// A request whose reply comes back through a slot of its own, so that
// something can be done between the server's answer and the client's
// seeing it: invalidating the cache after a write, filling it after a read.
class Watch : public SlotOwner {
 public:
  Watch(std::shared_ptr<HotKeyCache> cache, RouteRequest& req, ReplySlot& client, RouteLife* life)
      : count_(life), cache_(std::move(cache)), slots_(req.slots), client_(client) {
    ++client_.outstanding;
    client_.add_fragment();
    own_ = slots_.acquire_slot(this);
  }
  virtual ~Watch() { slots_.release_slot(own_); }

  template <typename Send>
  void run(Send&& send) {
    sending_ = true;
    send(*own_);
    sending_ = false;
    if (own_->complete) return finish(true);
  }
  void on_slot_complete() override {
    if (!sending_) finish(false);
  }

 protected:
  virtual void done(ReplySlot& reply) = 0;
  HeldCount count_;
  std::shared_ptr<HotKeyCache> cache_;

 private:
  void finish(bool synchronous) {
    done(*own_);
    client_.drop_reply |= own_->drop_reply;
    take_reply(client_, *own_);
    finish_work(this, client_, synchronous);
  }
  SlotSource& slots_;
  ReplySlot& client_;
  ReplySlot* own_ = nullptr;
  bool sending_ = false;
};

// A write of one key, or (empty key, `all`) a flush.
class WriteWatch final : public Watch {
 public:
  WriteWatch(std::shared_ptr<HotKeyCache> cache, RouteRequest& req, ReplySlot& client,
             RouteLife* life, bool all)
      : Watch(std::move(cache), req, client, life), all_(all) {
    if (!all_) key_.assign(req.request.keys[0]);
    invalidate();
  }

 private:
  void invalidate() {
    if (all_) {
      cache_->clear();
    } else {
      cache_->invalidate(key_);
    }
  }
  void done(ReplySlot&) override { invalidate(); }
  bool all_;
  std::string key_;
};

// A single-key get of a hot key not cached yet.
class FillWatch final : public Watch {
 public:
  FillWatch(std::shared_ptr<HotKeyCache> cache, RouteRequest& req, ReplySlot& client,
            RouteLife* life)
      : Watch(std::move(cache), req, client, life),
        key_(req.request.keys[0]),
        epoch_(cache_->epoch(key_)),
        slots_(req.slots) {}

 private:
  void done(ReplySlot& reply) override {
    // "VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n": the block is what
    // precedes END. A miss or an error is not kept.
    constexpr std::string_view kEnd = "END\r\n";
    size_t n = evbuffer_get_length(reply.reply);
    if (n <= kEnd.size() + 6) return;
    std::string text(n, '\0');
    evbuffer_copyout(reply.reply, text.data(), n);
    if (!text.starts_with("VALUE ") || !text.ends_with(kEnd)) return;
    text.resize(n - kEnd.size());
    cache_->fill(key_, text, epoch_, slots_.now_usec());
  }
  std::string key_;
  uint64_t epoch_;
  SlotSource& slots_;
};

class HotKeyKeyRoute final : public SingleKeyRoute {
 public:
  HotKeyKeyRoute(std::unique_ptr<SingleKeyRoute> inner, std::shared_ptr<HotKeyContext> hot)
      : inner_(std::move(inner)), hot_(std::move(hot)) {}

  void send(RouteRequest& req, ReplySlot& slot) override {
    hot_->observe(req.request.keys[0], req.now_usec);
    if (hot_->cache && changes_key(req.request)) {
      auto* w = new WriteWatch(hot_->cache, req, slot, hot_->life, false);
      return w->run([&](ReplySlot& own) { inner_->send(req, own); });
    }
    inner_->send(req, slot);
  }
  void invalidate(RouteRequest& req, ReplySlot& slot) override {
    if (!hot_->cache) return inner_->invalidate(req, slot);
    auto* w = new WriteWatch(hot_->cache, req, slot, hot_->life, false);
    w->run([&](ReplySlot& own) { inner_->invalidate(req, own); });
  }

 private:
  std::unique_ptr<SingleKeyRoute> inner_;
  std::shared_ptr<HotKeyContext> hot_;
};

class HotKeyGetRoute final : public Route {
 public:
  HotKeyGetRoute(std::unique_ptr<Route> inner, std::shared_ptr<HotKeyContext> hot)
      : inner_(std::move(inner)), hot_(std::move(hot)) {}

  void send(RouteRequest& req, ReplySlot& slot) override {
    HotKeyContext& hot = *hot_;
    const auto& keys = req.request.keys;
    for (std::string_view key : keys) hot.observe(key, req.now_usec);
    const bool gets = req.request.command == proto::Command::gets;  // binary GETs too
    const bool one_get = keys.size() == 1 && (req.request.command == proto::Command::get || gets);
    if (hot.cache) {
      if (changes_key(req.request)) {  // gat, gats
        if (keys.size() == 1) {
          auto* w = new WriteWatch(hot.cache, req, slot, hot.life, false);
          return w->run([&](ReplySlot& own) { inner_->send(req, own); });
        }
        for (std::string_view key : keys) hot.cache->invalidate(key);
        // Invalidated again per key as each is answered would need the
        // reply split; a touch does not change the value, only its life.
      } else if (one_get) {
        std::string& text = req.scratch.text;
        text.clear();
        if (hot.cache->lookup(keys[0], req.now_usec, text, gets)) {
          evbuffer_drain(req.in, req.header_bytes);
          text.append("END\r\n");
          req.pool_stats.hot_key_hits.add();
          return answer(slot, std::string_view(text).substr(0, text.size() - 2));
        }
        if (hot.tracker.any_hot() && hot.tracker.is_hot(keys[0])) {
          auto* w = new FillWatch(hot.cache, req, slot, hot.life);
          return w->run([&](ReplySlot& own) { send_read(req, own); });
        }
      }
    }
    if (one_get && !hot.copies.empty() && hot.tracker.any_hot() && hot.tracker.is_hot(keys[0]))
      return send_spread(req, slot);
    inner_->send(req, slot);
  }

 private:
  void send_read(RouteRequest& req, ReplySlot& slot) {
    if (!hot_->copies.empty() && hot_->tracker.is_hot(req.request.keys[0]))
      return send_spread(req, slot);
    inner_->send(req, slot);
  }
  // Copy i's route reads the key's i-th live copy: choosing among the live
  // ones only, an ejected server is never asked.
  void send_spread(RouteRequest& req, ReplySlot& slot) {
    HotKeyContext& hot = *hot_;
    std::array<size_t, kMaxReplicas> live;
    size_t n = hot.replicas->copies(req.request.keys[0], live);
    if (n == 0) return inner_->send(req, slot);
    hot.copies[hot.next_copy++ % n]->send(req, slot);
  }
  std::unique_ptr<Route> inner_;
  std::shared_ptr<HotKeyContext> hot_;
};

class HotKeyFlushRoute final : public Route {
 public:
  HotKeyFlushRoute(std::unique_ptr<Route> inner, std::shared_ptr<HotKeyContext> hot)
      : inner_(std::move(inner)), hot_(std::move(hot)) {}
  void send(RouteRequest& req, ReplySlot& slot) override {
    auto* w = new WriteWatch(hot_->cache, req, slot, hot_->life, true);
    w->run([&](ReplySlot& own) { inner_->send(req, own); });
  }

 private:
  std::unique_ptr<Route> inner_;
  std::shared_ptr<HotKeyContext> hot_;
};

}  // namespace

void HotKeyContext::record(std::string_view key, uint64_t now_usec) {
  tracker.record(key, now_usec, [this](std::string_view k) {
    size_t server = placement.place(k);
    return server < server_names.size() ? std::string_view(server_names[server])
                                        : std::string_view("-");
  });
}

bool changes_key(const proto::Request& r) {
  switch (r.command) {
    case proto::Command::get:
    case proto::Command::gets:
    case proto::Command::meta_debug:
    case proto::Command::meta_noop:
      return false;
    case proto::Command::meta_get:
      // T touches, N may create the item; E sets the CAS it will have.
      return r.meta_flags.has('T') || r.meta_flags.has('N') || r.meta_flags.has('E') ||
             r.unmodeled_flags;
    default:
      return true;
  }
}

void wrap_hot_key_routes(PoolRoute& route) {
  const conf::PoolConfig& pc = route.pool->config;
  route.stats->hot_keys.configure(pc.name, pc.hot_key_log_share);
  std::shared_ptr<HotKeyCache> cache;
  if (pc.hot_key_cache_mb > 0) {
    cache = HotKeyCache::for_pool(pc.name, size_t{pc.hot_key_cache_mb} << 20,
                                  uint64_t{pc.hot_key_ttl_ms} * 1000);
  }
  std::vector<std::string> names;
  for (const ServerInfo& s : route.pool->servers) names.push_back(s.stats_name);
  std::vector<Route*> copies;
  if (pc.hot_key_spread) {
    for (const auto& r : route.copy_reads) copies.push_back(r.get());
  }
  auto hot = std::make_shared<HotKeyContext>(
      HotKeyContext{route.stats->hot_keys, *route.placement, std::move(names), cache,
                    std::move(copies), route.replicas.get(), route.life.get()});
  route.key = std::make_unique<HotKeyKeyRoute>(std::move(route.key), hot);
  route.multi_get = std::make_unique<HotKeyGetRoute>(std::move(route.multi_get), hot);
  if (cache) route.all = std::make_unique<HotKeyFlushRoute>(std::move(route.all), hot);
}

}  // namespace memshard::proxy
