#include "proxy/routes/primary_first_route.h"

#include <string>

#include "proxy/protocol/meta_codec.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/support/stats.h"

namespace memshard::proxy {

Work PrimaryFirstRoute::write(RouteRequest& req, ReplySlot& client, std::string bytes,
                              size_t header) const {
  const bool classic = !proto::is_meta(req.request.command);
  const bool noreply = req.request.noreply, quiet = req.request.quiet;
  HeldRequest held(req, std::move(bytes), header);  // req is not touched past this point
  // The first live copy decides: the next one only when it could not answer.
  Reply decision;
  size_t decider = 0;
  for (; decider < copies_.size(); ++decider) {
    decision = co_await Call(held, *copies_[decider]);
    if (!decision.failed() || decider + 1 == copies_.size()) break;
  }
  if (decision.status() == proto::ReplyStatus::done) {
    Calls calls;
    std::vector<size_t> copy_index;
    if (copy_to_others(held, decider, calls)) {
      for (size_t i = 0; i < copies_.size(); ++i) {
        if (i != decider) copy_index.push_back(i);
      }
      co_await calls.all();
      Reply* failed = nullptr;
      if (!enough(held, copy_index, calls, failed) && failed != nullptr && failed->failed()) {
        failed->pass_to(client);
        co_return;
      }
    }
  }
  // The client's reply from the deciding copy's, as the client asked.
  const proto::ReplyStatus status = decision.status();
  const bool error =
      status == proto::ReplyStatus::server_error || status == proto::ReplyStatus::client_error;
  if (noreply) {
    client.compose({}, status);  // classic noreply: nothing at all, errors included
  } else if (classic && !error) {
    client.compose({proto::classic_storage_reply(status)}, status);
  } else if (quiet && status == proto::ReplyStatus::done) {
    client.compose({}, status);  // meta q hides HD only
  } else {
    decision.pass_to(client);
  }
}

bool PrimaryFirstRoute::copy_to_others(HeldRequest& held, size_t decider, Calls& calls) const {
  proto::Request set = held.request();
  set.command = proto::Command::set;
  set.mode = proto::Mode::set;
  set.has_cas = false;
  set.cas = 0;
  set.quiet = set.noreply = false;
  set.meta_flags.clear();
  std::string bytes;
  const std::string_view value = held.value();
  if (!proto::append_meta_request(set, value, bytes)) return false;
  const size_t header = bytes.size() - value.size() - 2;
  held.replace(std::move(bytes), header);
  for (size_t i = 0; i < copies_.size(); ++i) {
    if (i != decider) calls.add(held, *copies_[i]);
  }
  return true;
}

bool PrimaryFirstRoute::enough(const HeldRequest& held, const std::vector<size_t>& copy_index,
                               Calls& written, Reply*& failed) const {
  size_t ok = 1;  // the deciding copy
  for (size_t k = 0; k < written.size(); ++k) {
    ServerStats* server = replicas_ == nullptr || held.request().keys.empty()
                              ? nullptr
                              : replicas_->counters(held.request().keys[0], copy_index[k]);
    held.pool_stats().replica_writes.add();
    if (server != nullptr) server->replica_writes.add();
    if (written.reply(k).status() == proto::ReplyStatus::done) {
      ++ok;
    } else {
      held.pool_stats().replica_write_failures.add();
      if (server != nullptr) server->replica_write_failures.add();
      if (failed == nullptr) failed = &written.reply(k);
    }
  }
  const size_t total = copies_.size();
  return policy_ == ReplyPolicy::first      ? true
         : policy_ == ReplyPolicy::majority ? 2 * ok > total
                                            : ok == total;
}

void PrimaryFirstRoute::send(RouteRequest& req, ReplySlot& slot) {
  proto::Request loud = req.request;
  loud.quiet = loud.noreply = false;
  std::string bytes;
  // The value as the client sent it, after its line.
  std::string value;
  if (req.request.data_bytes >= 2) {
    value.resize(req.request.data_bytes - 2);
    evbuffer_ptr at;
    evbuffer_ptr_set(req.in, &at, req.header_bytes, EVBUFFER_PTR_SET);
    evbuffer_copyout_from(req.in, &at, value.data(), value.size());
  }
  if (!proto::append_meta_request(loud, value, bytes)) return fallback_.send(req, slot);
  const size_t header = bytes.size() - value.size() - (req.request.data_bytes >= 2 ? 2 : 0);
  evbuffer_drain(req.in, req.bytes());
  slot.add_fragment();
  write(req, slot, std::move(bytes), header).start(slot, life_);
}

}  // namespace memshard::proxy
