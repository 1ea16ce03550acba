#include "proxy/routes/hot_key_routes.h"

#include <array>

#include "proxy/protocol/replies.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/routes/work.h"

namespace memshard::proxy {

namespace {

// A write of `key` (or, empty, a flush): the cache forgets the key (or
// everything) when the request is sent (`send` puts it into the slot it is
// given) and again once it is answered, before the client sees the reply.
template <typename Send>
Work watch_write(std::shared_ptr<HotKeyCache> cache, std::string key, SlotSource& slots,
                 ReplySlot& client, Send send) {
  const auto forget = [&] { key.empty() ? cache->clear() : cache->invalidate(key); };
  forget();
  Reply reply = co_await Call(slots, send);
  forget();
  reply.pass_to(client);
}

// A single-key get of a hot key not cached yet (`send` puts it into the
// slot it is given): its hit fills the cache.
template <typename Send>
Work fill(std::shared_ptr<HotKeyCache> cache, std::string key, SlotSource& slots, ReplySlot& client,
          Send send) {
  const uint64_t epoch = cache->epoch(key);
  Reply reply = co_await Call(slots, send);
  if (reply.status() == proto::ReplyStatus::hit) {
    // "VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n": the block is
    // what precedes END.
    std::string text = reply.text();
    if (text.ends_with(proto::reply::kEnd)) {
      text.resize(text.size() - proto::reply::kEnd.size());
      cache->fill(key, text, epoch, slots.now_usec());
    }
  }
  reply.pass_to(client);
}

class HotKeyKeyRoute final : public SingleKeyRoute {
 public:
  HotKeyKeyRoute(std::unique_ptr<SingleKeyRoute> inner, std::shared_ptr<HotKeyContext> hot)
      : inner_(std::move(inner)), hot_(std::move(hot)) {}

  void send(RouteRequest& req, ReplySlot& slot) override {
    hot_->observe(req.request.keys[0], req.now_usec);
    if (hot_->cache && proto::changes_key(req.request)) {
      slot.add_fragment();
      return watch_write(hot_->cache, std::string(req.request.keys[0]), req.slots, slot,
                         [&](ReplySlot& own) { inner_->send(req, own); })
          .start(slot, hot_->life);
    }
    inner_->send(req, slot);
  }
  void invalidate(RouteRequest& req, ReplySlot& slot) override {
    if (!hot_->cache) return inner_->invalidate(req, slot);
    slot.add_fragment();
    watch_write(hot_->cache, std::string(req.request.keys[0]), req.slots, slot,
                [&](ReplySlot& own) { inner_->invalidate(req, own); })
        .start(slot, hot_->life);
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
      if (proto::changes_key(req.request)) {  // gat, gats
        if (keys.size() == 1) {
          slot.add_fragment();
          return watch_write(hot.cache, std::string(keys[0]), req.slots, slot,
                             [&](ReplySlot& own) { inner_->send(req, own); })
              .start(slot, hot.life);
        }
        for (std::string_view key : keys) hot.cache->invalidate(key);
        // Invalidated again per key as each is answered would need the
        // reply split; a touch does not change the value, only its life.
      } else if (one_get) {
        std::string& text = req.scratch.text;
        text.clear();
        if (hot.cache->lookup(keys[0], req.now_usec, text, gets)) {
          evbuffer_drain(req.in, req.header_bytes);
          text.append(proto::reply::kEnd);
          req.pool_stats.hot_key_hits.add();
          return answer(slot, std::string_view(text).substr(0, text.size() - 2));
        }
        if (hot.tracker.any_hot() && hot.tracker.is_hot(keys[0])) {
          slot.add_fragment();
          return fill(hot.cache, std::string(keys[0]), req.slots, slot,
                      [&](ReplySlot& own) { send_read(req, own); })
              .start(slot, hot.life);
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
    slot.add_fragment();
    watch_write(hot_->cache, std::string(), req.slots, slot, [&](ReplySlot& own) {
      inner_->send(req, own);
    }).start(slot, hot_->life);
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

std::unique_ptr<SingleKeyRoute> hot_key_route(std::unique_ptr<SingleKeyRoute> inner,
                                              std::shared_ptr<HotKeyContext> hot) {
  return std::make_unique<HotKeyKeyRoute>(std::move(inner), std::move(hot));
}

std::unique_ptr<Route> hot_key_get_route(std::unique_ptr<Route> inner,
                                         std::shared_ptr<HotKeyContext> hot) {
  return std::make_unique<HotKeyGetRoute>(std::move(inner), std::move(hot));
}

std::unique_ptr<Route> hot_key_flush_route(std::unique_ptr<Route> inner,
                                           std::shared_ptr<HotKeyContext> hot) {
  return std::make_unique<HotKeyFlushRoute>(std::move(inner), std::move(hot));
}

}  // namespace memshard::proxy
