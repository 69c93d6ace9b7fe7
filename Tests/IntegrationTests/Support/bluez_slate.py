'''A BlueZ double for the ble plugin's tests: python-dbusmock's bluez5 template (adapters and
devices) extended with GATT as BlueZ 5 exposes it, and with the behaviour the plugin relies on:

- Device1.Connect sets Connected, then (as LE service discovery does) adds the device's
  GattService1/GattCharacteristic1 objects with ObjectManager.InterfacesAdded, then sets
  ServicesResolved; Disconnect (or a dropped link) reverses that with InterfacesRemoved.
- GattCharacteristic1: StartNotify/StopNotify (only for notify/indicate characteristics),
  WriteValue/ReadValue with BlueZ's flags and errors (org.bluez.Error.NotConnected,
  NotPermitted, NotSupported, InvalidArguments); Value is sent as `ay`.
- Test controls on org.bluez.Mock: AddGattLayout, Notify (a button press: a Value change,
  emitted only while notifying), Written (what WriteValue received), DropLink, SetAdapterPowered.
'''

import dbus

from dbusmock import OBJECT_MANAGER_IFACE, mockobject
from dbusmock.templates.bluez5 import *  # noqa: F401,F403  the template's names, load() and methods
from dbusmock.templates import bluez5

GATT_SERVICE_IFACE = 'org.bluez.GattService1'
GATT_CHRC_IFACE = 'org.bluez.GattCharacteristic1'
ERROR = 'org.bluez.Error.'


def bluez_error(name, message):
    return dbus.exceptions.DBusException(message, name=ERROR + name)


def load(mock, parameters):
    bluez5.load(mock, parameters)
    # The stock Connect never resolves services; AddDevice looks these up at call time.
    bluez5.Connect = Connect
    bluez5.Disconnect = Disconnect
    mock.layouts = {}      # device path -> [(service uuid, [(chrc uuid, [flags])])]
    mock.written = {}      # characteristic path -> [bytes]


def manager():
    return mockobject.objects['/']


def set_props(obj, iface, props):
    obj.UpdateProperties(iface, props)


@dbus.service.method(bluez5.BLUEZ_MOCK_IFACE, in_signature='ssa(sas)', out_signature='')
def AddGattLayout(self, device_path, service_uuid, characteristics):
    '''Declares the primary service and its characteristics (uuid, flags) a device reveals once
    connected and resolved. May come before the device exists (a board about to come into range).'''
    self.layouts.setdefault(device_path, []).append(
        (str(service_uuid), [(str(uuid), [str(flag) for flag in flags]) for uuid, flags in characteristics]))


def gatt_paths(device_path):
    root = manager()
    paths = []
    for service_index, (service_uuid, characteristics) in enumerate(root.layouts.get(device_path, [])):
        service_path = '%s/service%04x' % (device_path, 0x10 + service_index * 0x10)
        chrc_paths = ['%s/char%04x' % (service_path, 0x11 + service_index * 0x10 + index) for index in range(len(characteristics))]
        paths.append((service_path, service_uuid, list(zip(chrc_paths, characteristics))))
    return paths


def resolve_services(device):
    device_path = device.__dbus_object_path__
    for service_path, service_uuid, characteristics in gatt_paths(device_path):
        service_props = {
            'UUID': dbus.String(service_uuid),
            'Device': dbus.ObjectPath(device_path),
            'Primary': dbus.Boolean(True),
            'Includes': dbus.Array([], signature='o'),
        }
        manager().AddObject(service_path, GATT_SERVICE_IFACE, service_props, [])
        manager().EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}',
                             [dbus.ObjectPath(service_path), {GATT_SERVICE_IFACE: service_props}])
        for chrc_path, (uuid, flags) in characteristics:
            # Value is absent until read or notified, as in BlueZ's cache.
            props = {
                'UUID': dbus.String(uuid),
                'Service': dbus.ObjectPath(service_path),
                'Flags': dbus.Array(flags, signature='s'),
                'Notifying': dbus.Boolean(False),
            }
            manager().AddObject(chrc_path, GATT_CHRC_IFACE, props, [
                ('StartNotify', '', '', StartNotify),
                ('StopNotify', '', '', StopNotify),
                ('WriteValue', 'aya{sv}', '', WriteValue),
                ('ReadValue', 'a{sv}', 'ay', ReadValue),
            ])
            chrc = mockobject.objects[chrc_path]
            chrc.device = device
            chrc.flags = flags
            manager().EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}',
                                 [dbus.ObjectPath(chrc_path), {GATT_CHRC_IFACE: props}])
    set_props(device, bluez5.DEVICE_IFACE, {'ServicesResolved': dbus.Boolean(True)})


def drop_services(device):
    device_path = device.__dbus_object_path__
    set_props(device, bluez5.DEVICE_IFACE, {'ServicesResolved': dbus.Boolean(False)})
    for service_path, _, characteristics in reversed(gatt_paths(device_path)):
        for chrc_path, _ in reversed(characteristics):
            if chrc_path in mockobject.objects:
                manager().RemoveObject(chrc_path)
                manager().EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesRemoved', 'oas',
                                     [dbus.ObjectPath(chrc_path), [GATT_CHRC_IFACE]])
        if service_path in mockobject.objects:
            manager().RemoveObject(service_path)
            manager().EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesRemoved', 'oas',
                                 [dbus.ObjectPath(service_path), [GATT_SERVICE_IFACE]])


def adapter_powered(device):
    adapter = mockobject.objects[str(device.props[bluez5.DEVICE_IFACE]['Adapter'])]
    return bool(adapter.props[bluez5.ADAPTER_IFACE]['Powered'])


def Connect(device):
    if not adapter_powered(device):
        raise bluez_error('NotReady', 'Resource Not Ready')
    if device.connected:
        raise bluez_error('AlreadyConnected', 'Already Connected')
    device.connected = True
    set_props(device, bluez5.DEVICE_IFACE, {'Connected': dbus.Boolean(True)})
    resolve_services(device)


def Disconnect(device):
    if not device.connected:
        raise bluez_error('NotConnected', 'Not Connected')
    disconnect(device)


def disconnect(device):
    device.connected = False
    drop_services(device)
    set_props(device, bluez5.DEVICE_IFACE, {'Connected': dbus.Boolean(False)})


def StartNotify(chrc):
    if not chrc.device.connected:
        raise bluez_error('NotConnected', 'Not Connected')
    if 'notify' not in chrc.flags and 'indicate' not in chrc.flags:
        raise bluez_error('NotSupported', 'Operation is not supported')
    if chrc.props[GATT_CHRC_IFACE]['Notifying']:
        raise bluez_error('InProgress', 'In Progress')
    set_props(chrc, GATT_CHRC_IFACE, {'Notifying': dbus.Boolean(True)})


def StopNotify(chrc):
    if not chrc.props[GATT_CHRC_IFACE]['Notifying']:
        raise bluez_error('Failed', 'No notify session started')
    set_props(chrc, GATT_CHRC_IFACE, {'Notifying': dbus.Boolean(False)})


def WriteValue(chrc, value, options):
    if not chrc.device.connected:
        raise bluez_error('NotConnected', 'Not Connected')
    kind = str(options.get('type', 'request'))
    if kind not in ('request', 'command', 'reliable'):
        raise bluez_error('InvalidArguments', 'Invalid arguments in method call')
    needed = 'write' if kind != 'command' else 'write-without-response'
    if needed not in chrc.flags:
        raise bluez_error('NotPermitted', 'Write not permitted')
    manager().written.setdefault(chrc.__dbus_object_path__, []).append(bytes(value))


def ReadValue(chrc, options):
    if not chrc.device.connected:
        raise bluez_error('NotConnected', 'Not Connected')
    if 'read' not in chrc.flags:
        raise bluez_error('NotPermitted', 'Read not permitted')
    return dbus.Array(chrc.props[GATT_CHRC_IFACE].get('Value', []), signature='y')


@dbus.service.method(bluez5.BLUEZ_MOCK_IFACE, in_signature='oay', out_signature='b')
def Notify(self, chrc_path, value):
    '''The board sends a notification (a button press). Like BlueZ, nothing is emitted unless a
    client started notifications; every notification emits PropertiesChanged, even if the value
    did not change. Answers whether it was emitted.'''
    chrc = mockobject.objects[str(chrc_path)]
    if not chrc.props[GATT_CHRC_IFACE]['Notifying']:
        return False
    value = dbus.Array([dbus.Byte(b) for b in value], signature='y')
    chrc.props[GATT_CHRC_IFACE]['Value'] = value
    chrc.EmitSignal(dbus.PROPERTIES_IFACE, 'PropertiesChanged', 'sa{sv}as',
                    [GATT_CHRC_IFACE, {'Value': dbus.Array(value, signature='y', variant_level=1)}, []])
    return True


@dbus.service.method(bluez5.BLUEZ_MOCK_IFACE, in_signature='o', out_signature='aay')
def Written(self, chrc_path):
    return [dbus.Array(v, signature='y') for v in self.written.get(str(chrc_path), [])]


@dbus.service.method(bluez5.BLUEZ_MOCK_IFACE, in_signature='o', out_signature='')
def DropLink(self, device_path):
    '''The board goes out of range: the link drops without a Disconnect call.'''
    device = mockobject.objects[str(device_path)]
    if device.connected:
        disconnect(device)


@dbus.service.method(bluez5.BLUEZ_MOCK_IFACE, in_signature='sb', out_signature='')
def SetAdapterPowered(self, adapter_name, powered):
    '''Powers an adapter off (its devices disconnect) or on.'''
    adapter_path = '/org/bluez/' + adapter_name
    adapter = mockobject.objects[adapter_path]
    if not powered:
        for path, obj in list(mockobject.objects.items()):
            if path.startswith(adapter_path + '/dev_') and path.count('/') == 4 and getattr(obj, 'connected', False):
                disconnect(obj)
    set_props(adapter, bluez5.ADAPTER_IFACE, {'Powered': dbus.Boolean(bool(powered))})
