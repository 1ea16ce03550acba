#include "proxy/routes/split_route.h"

#include <span>

#include "proxy/backends/repair_log.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/routes/key_route.h"

namespace memshard::proxy {

void SplitRoute::send(RouteRequest& req, ReplySlot& slot) {
  RequestScratch& work = req.scratch;
  slot.set_kind(SlotKind::retrieval);
  size_t nservers = placement_.size();
  if (work.fragment_of_server.size() < nservers + 1)
    work.fragment_of_server.assign(nservers + 1, -1);
  work.server_of_fragment.clear();
  const auto& keys = req.request.keys;
  for (uint32_t pos = 0; pos < keys.size(); ++pos) {
    size_t server = placement_.place(keys[pos]);
    if (server == Placement::npos) server = nservers;  // nothing live: a failed fragment
    int32_t f = work.fragment_of_server[server];
    if (f < 0) {
      f = static_cast<int32_t>(slot.fragment_count());
      slot.add_fragment();
      work.fragment_of_server[server] = f;
      work.server_of_fragment.push_back(server);
    }
    slot.add_key(keys[pos], static_cast<uint32_t>(f));
  }
  for (size_t server : work.server_of_fragment) work.fragment_of_server[server] = -1;

  // get and gets lines are built by the outbox, which joins those queued
  // back to back into one multi-get; gat and gats (whose exptime must
  // match) go as lines of their own.
  std::string_view shared_verb;
  if (req.request.command == proto::Command::get) shared_verb = "get";
  if (req.request.command == proto::Command::gets) shared_verb = "gets";
  bool whole_line = work.server_of_fragment.size() == 1 && shared_verb.empty();
  if (!whole_line) evbuffer_drain(req.in, req.header_bytes);
  const bool writes = proto::changes_key(req.request);  // gat, gats
  const uint32_t fragments = static_cast<uint32_t>(slot.fragment_count());
  for (uint32_t f = 0; f < fragments; ++f) {
    size_t server = work.server_of_fragment[f];
    Outbox* outbox = server < nservers ? placement_.server(server).outbox(req.affinity) : nullptr;
    RepairLog* log = server < nservers ? placement_.server(server).repairs() : nullptr;
    if (outbox == nullptr && writes && log != nullptr) {
      for (uint32_t pos : slot.fragment(f).key_positions) log->record(slot.key(pos));
    }
    // The read gate (key_route.h): keys the server may hold stale are
    // deleted there first, on the connection the retrieval takes.
    if (outbox != nullptr && log != nullptr && !log->clear()) {
      for (uint32_t pos : slot.fragment(f).key_positions) {
        if (log->gates(slot.key(pos))) enqueue_delete(*outbox, slot.key(pos), req, slot);
      }
    }
    if (outbox == nullptr) {
      slot.fragment(f).failed = true;
      slot.note_error(server < nservers ? placement_.server(server).refusal()
                                        : proto::reply::own::kBackendUnavailable);
      req.count_error();
      continue;
    }
    if (!shared_verb.empty()) {
      std::span<const std::string_view> fragment_keys = keys;
      if (slot.fragment_count() > 1) {
        work.key_views.clear();
        for (uint32_t pos : slot.fragment(f).key_positions) work.key_views.push_back(slot.key(pos));
        fragment_keys = work.key_views;
      }
      slot.expect();
      req.count_fragment();
      outbox->enqueue_retrieval(shared_verb, fragment_keys,
                                BackendOp{&slot, f, ReplyMode::retrieval, req.now_usec});
      continue;
    }
    evbuffer* out = outbox->output();
    if (whole_line) {
      // One server holds every key: the client's own line serves as is.
      evbuffer_remove_buffer(req.in, out, req.header_bytes);
    } else {
      work.key_views.clear();
      for (uint32_t pos : slot.fragment(f).key_positions) work.key_views.push_back(slot.key(pos));
      work.text.clear();
      proto::append_retrieval_line(req.request, work.key_views, work.text);
      evbuffer_add(out, work.text.data(), work.text.size());
    }
    slot.expect();
    req.count_fragment();
    BackendOp op{&slot, f, ReplyMode::retrieval, req.now_usec};
    op.writes = writes;
    outbox->enqueue(op);
  }
  if (whole_line && slot.outstanding() == 0) evbuffer_drain(req.in, req.header_bytes);
  if (slot.outstanding() == 0) slot.complete_unsent();
}

}  // namespace memshard::proxy
