-- Jini discovery for Wireshark and tshark: multicast requests and
-- announcements (UDP 4160, protocol versions 1 and 2) and unicast
-- discovery (TCP 4160, and the reply ports multicast requests name), as
-- "jinid inspect" decodes them. Shipped with jinid (Apache-2.0).
--
-- Install: jinid inspect --install-dissector (it writes this file to
-- ~/.local/lib/wireshark/plugins/), or copy it there; or load it for one
-- run: tshark -X lua_script:jini.lua -r capture.pcap -Y jini
-- A capture whose segments arrive out of order needs Wireshark's TCP
-- preference "Reassemble out-of-order segments" (tshark -o
-- tcp.reassemble_out_of_order:TRUE), as jinid reassembles them.
--
-- Fields: jini.kind, jini.version, jini.format, jini.serviceid (a
-- lookup service's; a request's known ones), jini.group (one each; the
-- public group is the empty string), jini.host, jini.port, jini.sequence,
-- jini.registrar (java or jinid), jini.error.

local jini = Proto("jini", "Jini Discovery")

local f = {
	kind = ProtoField.string("jini.kind", "Kind"),
	version = ProtoField.uint32("jini.version", "Protocol version"),
	format = ProtoField.string("jini.format", "Format ID"),
	serviceid = ProtoField.string("jini.serviceid", "ServiceID"),
	group = ProtoField.string("jini.group", "Group"),
	host = ProtoField.string("jini.host", "Host"),
	port = ProtoField.uint32("jini.port", "Port"),
	sequence = ProtoField.int64("jini.sequence", "Sequence number"),
	registrar = ProtoField.string("jini.registrar", "Registrar"),
	proposed = ProtoField.string("jini.proposed", "Proposed format"),
	err = ProtoField.string("jini.error", "Error"),
}
jini.fields = { f.kind, f.version, f.format, f.serviceid, f.group, f.host, f.port, f.sequence, f.registrar, f.proposed, f.err }

local PORT = 4160
local PLAINTEXT = "760f15cb7490ce36"

-- Reply ports multicast requests named (host:port), and the unicast
-- ports lookup services announced (by host): what jinid remembers too.
local reply_to = {}
local lookup_ports = {}

local tcp_port = DissectorTable.get("tcp.port")
local f_udp = Field.new("udp")
local f_fin = Field.new("tcp.flags.fin")

-- fin says whether the segment being dissected ends its direction.
local function fin()
	local v = f_fin()
	return v ~= nil and v()
end
-- DESEGMENT_UNTIL_FIN, as the C API has it, if this Lua does not.
DESEGMENT_UNTIL_FIN = DESEGMENT_UNTIL_FIN or 0x0ffffffe

local function hex(tvb, off, len)
	return tostring(tvb:range(off, len):bytes()):lower()
end

local function service_id(tvb, off)
	local h = hex(tvb, off, 16)
	return h:sub(1, 8) .. "-" .. h:sub(9, 12) .. "-" .. h:sub(13, 16) .. "-" .. h:sub(17, 20) .. "-" .. h:sub(21, 32)
end

-- A cursor over a tvb that stops, rather than throws, at the end.
local Reader = {}
Reader.__index = Reader

local function reader(tvb, off)
	return setmetatable({ tvb = tvb, off = off or 0, bad = nil }, Reader)
end

function Reader:left() return self.tvb:len() - self.off end

function Reader:need(n, what)
	if self.bad then return false end
	if n < 0 or self:left() < n then
		self.bad = what .. " needs " .. n .. " bytes at offset " .. self.off .. ", " .. self:left() .. " remain"
		return false
	end
	return true
end

function Reader:u8(what)
	if not self:need(1, what) then return nil end
	local v = self.tvb:range(self.off, 1):uint(); self.off = self.off + 1; return v
end

function Reader:u16(what)
	if not self:need(2, what) then return nil end
	local v = self.tvb:range(self.off, 2):uint(); self.off = self.off + 2; return v
end

function Reader:i32(what)
	if not self:need(4, what) then return nil end
	local v = self.tvb:range(self.off, 4):int(); self.off = self.off + 4; return v
end

function Reader:u64hex(what)
	if not self:need(8, what) then return nil end
	local v = hex(self.tvb, self.off, 8); self.off = self.off + 8; return v
end

function Reader:i64(what)
	if not self:need(8, what) then return nil end
	local v = self.tvb:range(self.off, 8):int64(); self.off = self.off + 8; return v
end

function Reader:sid(what)
	if not self:need(16, what) then return nil end
	local v = service_id(self.tvb, self.off); self.off = self.off + 16; return v
end

-- A string: a 16-bit length, then (modified) UTF-8.
function Reader:utf(what)
	local n = self:u16(what .. " length")
	if n == nil or not self:need(n, what) then return nil end
	local v = n == 0 and "" or self.tvb:range(self.off, n):string(ENC_UTF_8)
	self.off = self.off + n
	return v
end

-- show adds the decoded message to the tree and the Info column.
local function show(tree, tvb, pinfo, m)
	local t = tree:add(jini, tvb(), "Jini Discovery, " .. m.kind)
	t:add(f.kind, m.kind)
	if m.version then t:add(f.version, m.version) end
	if m.format then t:add(f.format, m.format) end
	if m.sequence then t:add(f.sequence, m.sequence) end
	if m.host then t:add(f.host, m.host) end
	if m.port then t:add(f.port, m.port) end
	for _, id in ipairs(m.ids or {}) do t:add(f.serviceid, id) end
	for _, g in ipairs(m.groups or {}) do
		local item = t:add(f.group, g)
		-- The public group's name is empty: its value stays "" (what
		-- filters and -T fields see, as jinid's); the tree names it.
		if g == "" then item:set_text("Group: (public)") end
	end
	for _, p in ipairs(m.proposed or {}) do t:add(f.proposed, p) end
	if m.registrar then t:add(f.registrar, m.registrar) end
	if m.err then t:add(f.err, m.err) end
	pinfo.cols.protocol = "JINI"
	local info = m.kind .. (m.version and (" v" .. m.version) or "")
	if m.host then
		-- An IPv6 address in brackets, as in a URL: [fe80::1]:4160.
		local h = m.host
		if h:find(":", 1, true) then h = "[" .. h .. "]" end
		info = info .. " " .. h .. ":" .. (m.port or "?")
	end
	if m.ids and m.ids[1] then info = info .. " id=" .. m.ids[1] end
	if m.err then info = info .. " [" .. m.err .. "]" end
	pinfo.cols.info = info
end

local function groups(r, count, what, utf)
	local out = {}
	for i = 1, count do
		local g = utf(r, what)
		if g == nil then return out end
		out[#out + 1] = g
	end
	return out
end

local function utf(r, what) return r:utf(what) end

-- Multicast ----------------------------------------------------------

local function dissect_udp(tvb, pinfo, tree)
	local r = reader(tvb)
	local m = {}
	local v = r:i32("protocol version")
	if v == nil then
		m.kind, m.err = "unknown", r.bad
		show(tree, tvb, pinfo, m)
		return
	end
	m.version = v
	if v == 1 then
		-- The group a version 1 packet went to says which it is.
		local dst = tostring(pinfo.dst)
		local request = dst == "224.0.1.85" or dst == "ff05::156"
		if not request and dst ~= "224.0.1.84" and dst ~= "ff05::155" then
			request = false -- neither group: jinid tries an announcement first
		end
		if request then
			m.kind = "multicast-request"
			m.host = tostring(pinfo.src)
			m.port = r:i32("port")
			local nids = r:i32("known count") or 0
			m.ids = {}
			for i = 1, math.max(nids, 0) do
				local id = r:sid("known service ID")
				if id == nil then break end
				m.ids[#m.ids + 1] = id
			end
			local n = r:i32("group count") or 0
			m.groups = groups(r, math.max(n, 0), "group", utf)
		else
			m.kind = "multicast-announcement"
			m.host = r:utf("host")
			m.port = r:i32("port")
			m.ids = { r:sid("service ID") }
			local n = r:i32("group count") or 0
			m.groups = groups(r, math.max(n, 0), "group", utf)
		end
	elseif v == 2 then
		local typ = r:u8("packet type")
		m.format = r:u64hex("format ID")
		if typ == 1 then
			m.kind = "multicast-request"
		elseif typ == 0 then
			m.kind = "multicast-announcement"
		else
			m.kind = "unknown"
			m.err = "packet type " .. tostring(typ)
		end
		if m.format and m.format ~= PLAINTEXT and not m.err then
			m.err = "unsupported discovery format " .. m.format
		elseif m.kind == "multicast-request" then
			m.host = r:utf("host")
			m.port = r:u16("port")
			local n = r:u16("group count") or 0
			m.groups = groups(r, n, "group", utf)
			local nids = r:u16("known count") or 0
			m.ids = {}
			for i = 1, nids do
				local id = r:sid("known service ID")
				if id == nil then break end
				m.ids[#m.ids + 1] = id
			end
		elseif m.kind == "multicast-announcement" then
			m.sequence = r:i64("sequence number")
			m.host = r:utf("host")
			m.port = r:u16("port")
			local n = r:u16("group count") or 0
			m.groups = groups(r, n, "group", utf)
			m.ids = { r:sid("service ID") }
		end
	else
		m.kind, m.version = "unknown", nil
		m.err = "unsupported discovery protocol version " .. v
	end
	m.err = m.err or r.bad
	if not m.err then
		if m.kind == "multicast-request" and m.host and m.port then
			reply_to[m.host .. ":" .. m.port] = true
			tcp_port:add(m.port, jini)
		elseif m.kind == "multicast-announcement" and m.host then
			lookup_ports[m.host] = m.port
		end
	end
	show(tree, tvb, pinfo, m)
end

-- Unicast ------------------------------------------------------------

-- The ServiceID a Reggie or jinid registrar proxy writes after its
-- fields, as block data of 16 bytes (0x77 0x10) after the class
-- RegistrarProxy: the first such block after the name.
local function proxy_service_id(tvb, from)
	local bytes = tvb:range(from):bytes()
	local s = bytes:raw()
	local at = s:find("RegistrarProxy", 1, true)
	if not at then
		-- A jinid from before it served Java: its descriptor alone, JSON.
		local d = s:match('"serviceID":"(%x+%-%x+%-%x+%-%x+%-%x+)"')
		return d and d:lower()
	end
	local i = s:find("\119\016", at, true) -- TC_BLOCKDATA, 16 bytes
	if not i or i + 17 > #s then return nil end
	return service_id(tvb, from + i + 1)
end

-- A jinid lookup service's descriptor, in its proxy's custom data.
local function is_jinid(tvb, from)
	return tvb:range(from):bytes():raw():find("jinid-descriptor:", 1, true) ~= nil
end

local function is_request(pinfo)
	if pinfo.dst_port == PORT then return true end
	if pinfo.src_port == PORT then return false end
	-- A connection to a requester's reply port: the requester speaks
	-- first, from that port.
	return reply_to[tostring(pinfo.src) .. ":" .. pinfo.src_port] == true
end

local function dissect_tcp(tvb, pinfo, tree)
	local len = tvb:len()
	if len < 4 then
		pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
		return
	end
	local v = tvb:range(0, 4):int()
	local m = { version = v }
	if is_request(pinfo) then
		m.kind = "unicast-request"
		if v == 2 then
			if len < 6 then pinfo.desegment_len = 6 - len; return end
			local n = tvb:range(4, 2):uint()
			if len < 6 + 8 * n then pinfo.desegment_len = 6 + 8 * n - len; return end
			m.proposed = {}
			for i = 0, n - 1 do m.proposed[#m.proposed + 1] = hex(tvb, 6 + 8 * i, 8) end
		elseif v ~= 1 then
			m.err = "unsupported discovery protocol version " .. v
		end
		show(tree, tvb, pinfo, m)
		return
	end
	-- A response ends with the connection: its registrar proxy is a Java
	-- object stream whose length only its parsing would tell. (A response
	-- that is refused a format is whole in 12 bytes.)
	if not (v == 2 and len >= 12 and hex(tvb, 4, 8) == "0000000000000000") and not fin() then
		pinfo.desegment_offset = 0
		pinfo.desegment_len = DESEGMENT_UNTIL_FIN
		return
	end
	m.kind = "unicast-response"
	local r = reader(tvb)
	r:i32("version")
	if v == 2 then
		m.format = r:u64hex("format ID")
		if m.format == "0000000000000000" then
			m.err = "the lookup service accepted none of the proposed formats"
		elseif m.format and m.format ~= PLAINTEXT then
			m.err = "unsupported discovery format " .. m.format
		else
			m.host = r:utf("host")
			m.port = r:u16("port")
			local n = r:i32("group count") or 0
			m.groups = groups(r, math.max(n, 0), "group", utf)
			if not r.bad then
				m.ids = { proxy_service_id(tvb, r.off) }
				m.registrar = is_jinid(tvb, r.off) and "jinid" or "java"
			end
		end
	elseif tvb:range(0, 2):uint() == 0xaced and len >= 6 then
		-- Version 1: a serialized MarshalledObject, then block data with
		-- the groups.
		m.version = 1
		m.host = tostring(pinfo.src)
		m.port = pinfo.src_port
		if reply_to[tostring(pinfo.dst) .. ":" .. pinfo.dst_port] then
			m.port = lookup_ports[m.host] -- connected back: the announced port
		end
		m.ids = { proxy_service_id(tvb, 0) }
		m.registrar = is_jinid(tvb, 0) and "jinid" or "java"
		-- The last block: 0x77, its length, the group count and groups.
		local s = tvb:range(0):bytes():raw()
		for i = #s - 2, 1, -1 do
			if s:byte(i) == 0x77 and i + 1 + s:byte(i + 1) == #s then
				local br = reader(tvb, i + 1)
				local n = br:i32("group count")
				if n and n >= 0 then
					local gs = groups(br, n, "group", utf)
					if not br.bad and br.off == #s then m.groups = gs; break end
				end
			end
		end
	else
		m.err = "unsupported discovery protocol version " .. v
	end
	m.err = m.err or r.bad
	show(tree, tvb, pinfo, m)
end

function jini.dissector(tvb, pinfo, tree)
	if f_udp() then
		dissect_udp(tvb, pinfo, tree)
	else
		dissect_tcp(tvb, pinfo, tree)
	end
	return tvb:len()
end

DissectorTable.get("udp.port"):add(PORT, jini)
tcp_port:add(PORT, jini)
