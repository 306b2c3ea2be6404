/* org.varlink.service: what the daemon is and the interfaces it describes. */
#include "api/call.h"
#include "api/methods.h"
#include "rt/util.h"

#include <string.h>

extern const char rt_idl_resource_tracker[];
extern const char rt_idl_varlink_service[];

static void m_get_info(struct rt_call *c)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "vendor", json_object_new_string("Spare Cores"));
    json_object_object_add(p, "product", json_object_new_string("resource-trackerd"));
    json_object_object_add(p, "version", json_object_new_string(RT_VERSION));
    json_object_object_add(p, "url", json_object_new_string("https://github.com/SpareCores/resource-tracker"));
    struct json_object *ifaces = json_object_new_array();
    json_object_array_add(ifaces, json_object_new_string("org.varlink.service"));
    json_object_array_add(ifaces, json_object_new_string(RT_VL_INTERFACE));
    json_object_object_add(p, "interfaces", ifaces);
    rt_call_reply(c, p);
}

static void m_get_interface_description(struct rt_call *c)
{
    const char *name = rt_call_string(c, "interface");
    const char *desc = strcmp(name, RT_VL_INTERFACE) == 0       ? rt_idl_resource_tracker
                       : strcmp(name, "org.varlink.service") == 0 ? rt_idl_varlink_service
                                                                  : NULL;
    struct json_object *p = json_object_new_object();
    if (!desc) {
        json_object_object_add(p, "interface", json_object_new_string(name));
        rt_call_error(c, "org.varlink.service.InterfaceNotFound", p);
        return;
    }
    json_object_object_add(p, "description", json_object_new_string(desc));
    rt_call_reply(c, p);
}

static const struct rt_method methods[] = {
    {.name = "GetInfo", .fn = m_get_info},
    {.name = "GetInterfaceDescription", .fn = m_get_interface_description,
     .params = {RT_REQ("interface", RT_P_STRING)}},
};

const struct rt_method_table rt_service_methods = {"org.varlink.service", methods, RT_ARRAY_SIZE(methods)};
