"""The ns-3 side of the packet-level reference: one run of a Network (packet/topology.py) in ns-3, through a small C++
driver declared with cppyy (a Python callable handed to ns-3's scheduler fails under cppyy; C++ callbacks do not).

What the driver builds: one ns-3 node per host, leaf and spine; one point-to-point link per Network link (its rate,
the jumbo MTU, its delay); on every port two bands, pure ACKs ahead of data (an RDMA NIC sends its acks apart from
its data; with ACKs queued behind a host's own outgoing data, uncontended ring flows ran 5-10% below line rate). A
switch port's data band is a RED queue disc marking ECN at K packets (DCTCP's step marking: the instantaneous queue,
no early drops, deep enough that nothing is dropped: the stand-in for a lossless fabric); a host port's is a FIFO
that marks nothing (hosts are not marking points; marking there cut each new connection's window at its own NIC and
slowed back-to-back ring steps by up to 19%). Static routes, so every flow crosses the spine the flow model's ECMP
hash chose (topology.py). Every flow is a DCTCP connection opened at t = 0; its data goes at t = START_S
(connections set up beforehand, as RDMA queue pairs are) or when the flows it waits for have arrived. It returns,
per flow, when its data started and when its last byte arrived.

Importing this module imports ns-3 (7-21 s): the `packet` extra only (`pip install -e .[packet]`).
"""

from __future__ import annotations

import numpy as np

from simcluster.packet.topology import Network

START_S = 1e-3          # the data starts here, after every connection's handshake
TCP_HEADERS = 52        # IPv4 20 + TCP 20 + timestamp option 12: a segment is MTU - 52 bytes
_SOURCE = r"""
namespace simcluster_packet {
using namespace ns3;

static std::vector<Ptr<Socket>> g_sock;
static std::vector<uint64_t> g_need, g_sent, g_got;
static std::vector<double> g_start, g_finish;
static std::vector<int> g_waiting;
static std::vector<char> g_started;
static std::vector<std::vector<int>> g_next;

static void Fill(int f) {
    Ptr<Socket> s = g_sock[f];
    while (g_sent[f] < g_need[f]) {
        uint32_t room = s->GetTxAvailable();
        if (room == 0) return;
        uint64_t n = std::min<uint64_t>(std::min<uint64_t>(room, g_need[f] - g_sent[f]), 1u << 20);
        int sent = s->Send(Create<Packet>((uint32_t) n));
        if (sent <= 0) return;
        g_sent[f] += (uint64_t) sent;
    }
}
static void Room(int f, Ptr<Socket>, uint32_t) { if (g_started[f]) Fill(f); }
static void Start(int f) { g_started[f] = 1; g_start[f] = Simulator::Now().GetSeconds(); Fill(f); }
static void Received(int f, Ptr<Socket> s) {
    Ptr<Packet> p;
    while ((p = s->Recv())) g_got[f] += p->GetSize();
    if (g_got[f] >= g_need[f] && g_finish[f] < 0) {
        g_finish[f] = Simulator::Now().GetSeconds();
        for (int c : g_next[f]) if (--g_waiting[c] == 0) Start(c);
    }
}
static void Accepted(int f, Ptr<Socket> s, const Address&) {
    s->SetPriority(6);   // its pure ACKs ahead of data
    s->SetRecvCallback(MakeBoundCallback(&Received, f));
}
static std::vector<Ptr<Socket>> g_listen;
static void Connect(int f, uint32_t remote, uint16_t port) {
    g_sock[f]->Bind();
    g_sock[f]->Connect(InetSocketAddress(Ipv4Address(remote), port));
}

// nodes: count; links: ends a, b, rate (bit/s), delay (s), ECN threshold (packets);
// addresses: node, address (one or more per host, on its first link); routes: node, destination, prefix, link;
// flows: source node, destination node, source address, destination address, bytes, the flows it waits for.
std::vector<double> Run(int nodes, std::vector<int> la, std::vector<int> lb, std::vector<double> rate,
                        std::vector<double> delay, std::vector<int> mark, int hosts, int mtu, int queue_packets,
                        std::vector<int> an, std::vector<uint32_t> aa,
                        std::vector<int> rn, std::vector<uint32_t> rd, std::vector<int> rp, std::vector<int> rl,
                        std::vector<int> fs, std::vector<int> fd, std::vector<uint32_t> fsa, std::vector<uint32_t> fda,
                        std::vector<double> fbytes, std::vector<int> dep_flow, std::vector<int> dep_on,
                        double start_s, double stop_s, int tcp_headers, std::string tcp) {
    RngSeedManager::SetSeed(1);   // every run alike, whatever ran before it in this process
    RngSeedManager::SetRun(1);
    RngSeedManager::ResetNextStreamIndex();
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName(tcp)));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mtu - tcp_headers));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1u << 25));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1u << 25));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MicroSeconds(20)));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(5)));
    Config::SetDefault("ns3::DropTailQueue<Packet>::MaxSize", QueueSizeValue(QueueSize("2p")));

    NodeContainer all;
    all.Create(nodes);
    InternetStackHelper stack;
    Ipv4StaticRoutingHelper staticRouting;
    stack.SetRoutingHelper(staticRouting);
    stack.Install(all);

    std::vector<int> ifa(la.size()), ifb(la.size());
    std::vector<int> first_if(nodes, -1);
    for (size_t i = 0; i < la.size(); ++i) {
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate((uint64_t) rate[i])));
        p2p.SetDeviceAttribute("Mtu", UintegerValue(mtu));
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(delay[i])));
        NetDeviceContainer devs = p2p.Install(all.Get(la[i]), all.Get(lb[i]));
        // every port: pure ACKs (priority 6) in band 0, ahead of data in band 1; a switch port's data band is RED marking
        // ECN at K packets (DCTCP's step marking), a host port's is a FIFO that marks nothing
        for (int end = 0; end < 2; ++end) {
            bool host = (end ? lb[i] : la[i]) < hosts;
            TrafficControlHelper tch;
            uint16_t root = tch.SetRootQueueDisc("ns3::PrioQueueDisc", "Priomap", StringValue("1 1 1 1 1 1 0 1 1 1 1 1 1 1 1 1"));
            TrafficControlHelper::ClassIdList bands = tch.AddQueueDiscClasses(root, 2, "ns3::QueueDiscClass");
            tch.AddChildQueueDisc(root, bands[0], "ns3::FifoQueueDisc",
                                  "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queue_packets)));
            if (host)
                tch.AddChildQueueDisc(root, bands[1], "ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1000000)));
            else
                tch.AddChildQueueDisc(root, bands[1], "ns3::RedQueueDisc", "MinTh", DoubleValue(mark[i]), "MaxTh", DoubleValue(mark[i]),
                                      "QW", DoubleValue(1.0), "Gentle", BooleanValue(false), "UseEcn", BooleanValue(true),
                                      "UseHardDrop", BooleanValue(false), "MeanPktSize", UintegerValue(mtu),
                                      "LinkBandwidth", DataRateValue(DataRate((uint64_t) rate[i])),
                                      "LinkDelay", TimeValue(Seconds(delay[i])),
                                      "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queue_packets)));
            tch.Install(devs.Get(end));
        }
        for (int end = 0; end < 2; ++end) {
            int id = end ? lb[i] : la[i];
            Ptr<Node> node = all.Get(id);
            Ptr<Ipv4> ip = node->GetObject<Ipv4>();
            int32_t k = ip->AddInterface(devs.Get(end));
            uint32_t net = 0xAC000000u + 4u * (uint32_t) i;   // 172.0.0.0/8: one /30 per link
            ip->AddAddress(k, Ipv4InterfaceAddress(Ipv4Address(net + 1 + end), Ipv4Mask("255.255.255.252")));
            ip->SetMetric(k, 1);
            ip->SetUp(k);
            (end ? ifb : ifa)[i] = k;
            if (first_if[id] < 0) first_if[id] = k;
        }
    }
    for (size_t i = 0; i < an.size(); ++i) {
        Ptr<Ipv4> ip = all.Get(an[i])->GetObject<Ipv4>();
        ip->AddAddress(first_if[an[i]], Ipv4InterfaceAddress(Ipv4Address(aa[i]), Ipv4Mask("255.255.0.0")));
    }
    for (size_t i = 0; i < rn.size(); ++i) {
        Ptr<Ipv4StaticRouting> table = staticRouting.GetStaticRouting(all.Get(rn[i])->GetObject<Ipv4>());
        int link = rl[i];
        int k = la[link] == rn[i] ? ifa[link] : ifb[link];
        uint32_t mask = rp[i] == 0 ? 0u : (0xFFFFFFFFu << (32 - rp[i]));
        table->AddNetworkRouteTo(Ipv4Address(rd[i]), Ipv4Mask(mask), (uint32_t) k);
    }

    size_t n = fs.size();
    g_sock.assign(n, nullptr); g_need.assign(n, 0); g_sent.assign(n, 0); g_got.assign(n, 0);
    g_start.assign(n, -1.0); g_finish.assign(n, -1.0); g_waiting.assign(n, 0); g_started.assign(n, 0); g_next.assign(n, std::vector<int>());
    for (size_t i = 0; i < dep_flow.size(); ++i) { g_waiting[dep_flow[i]] += 1; g_next[dep_on[i]].push_back(dep_flow[i]); }
    for (size_t f = 0; f < n; ++f) {
        uint16_t port = (uint16_t) (1000 + f);
        g_need[f] = (uint64_t) fbytes[f];
        Ptr<Socket> listen = Socket::CreateSocket(all.Get(fd[f]), TcpSocketFactory::GetTypeId());
        listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
        listen->Listen();
        listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(), MakeBoundCallback(&Accepted, (int) f));
        g_listen.push_back(listen);
        g_sock[f] = Socket::CreateSocket(all.Get(fs[f]), TcpSocketFactory::GetTypeId());
        g_sock[f]->SetSendCallback(MakeBoundCallback(&Room, (int) f));
        Simulator::Schedule(Seconds(1e-6), &Connect, (int) f, fda[f], port);
        if (g_waiting[f] == 0) Simulator::Schedule(Seconds(start_s), &Start, (int) f);
    }
    Simulator::Stop(Seconds(stop_s));
    Simulator::Run();
    std::vector<double> out;
    for (size_t f = 0; f < n; ++f) out.push_back(g_start[f]);
    for (size_t f = 0; f < n; ++f) out.push_back(g_finish[f]);
    for (size_t f = 0; f < n; ++f) out.push_back((double) g_got[f]);
    g_sock.clear();
    g_listen.clear();
    Simulator::Destroy();
    return out;
}
}
"""
_compiled = None


def driver():
    """ns-3 and the C++ driver, once per process."""
    global _compiled
    if _compiled is None:
        import cppyy
        from ns import ns  # noqa: F401  (loads ns-3's libraries and headers)

        cppyy.cppdef(_SOURCE)
        _compiled = cppyy.gbl.simcluster_packet
    return _compiled


def _vec(kind: str, values):
    import cppyy

    cast = float if kind == "double" else int
    v = cppyy.gbl.std.vector[kind]()
    for x in values:
        v.push_back(cast(x))
    return v


def run(net: Network, stop_s: float, tcp: str = "ns3::TcpDctcp") -> tuple[np.ndarray, np.ndarray]:
    """Per flow (seconds after its data could start): when its data started, and when its last byte arrived
    (NaN where it had not by stop_s)."""
    d = driver()
    n = len(net.flow_src)
    out = d.Run(net.nodes, _vec("int", net.link_a), _vec("int", net.link_b), _vec("double", net.link_bps),
                _vec("double", net.link_delay_s), _vec("int", net.mark_packets), net.hosts, net.mtu, net.queue_packets,
                _vec("int", net.addr_node), _vec("uint32_t", net.addr),
                _vec("int", net.route_node), _vec("uint32_t", net.route_dest), _vec("int", net.route_prefix),
                _vec("int", net.route_link),
                _vec("int", net.flow_src), _vec("int", net.flow_dst), _vec("uint32_t", net.flow_src_addr),
                _vec("uint32_t", net.flow_dst_addr), _vec("double", net.flow_bytes),
                _vec("int", net.dep_flow), _vec("int", net.dep_on), START_S, START_S + stop_s, TCP_HEADERS, tcp)
    out = np.array(list(out)).reshape(3, n)
    start, finish, got = out
    finish = np.where((finish < 0) | (got < np.asarray(net.flow_bytes)), np.nan, finish)
    return start - START_S, finish - START_S
