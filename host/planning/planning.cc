// The planning room's library (host/planning/README.md); its sources are added as the
// capability is built.
namespace impulse::planning_detail {
int room_marker() { return 0; }
}  // namespace impulse::planning_detail
